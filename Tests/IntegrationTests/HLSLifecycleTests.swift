import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension IntegrationTests {
    @Suite("HLS stream lifecycle")
    struct HLSLifecycleTests {
        @Test("A publisher reconnect keeps sequence numbers and timestamps continuous and marks its first segment EXT-X-DISCONTINUITY (same map); a new resolution brings a discontinuity and a new map")
        func reconnect() async throws {
            try await Scenario.run("hls-reconnect") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let small = try await MediaLibrary.shared.file(.gopSmallAudioVideo)
                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 5))
                let base = "/live/cam"
                let first = try scenario.publish(media, to: node.rtmpURL("live", "cam"), name: "publisher-1", loop: true)
                try await scenario.waitUntilLive(node, "live", "cam")
                try await scenario.waitForSegments(node, base, count: 2)

                let recorder = PlaylistRecorder()
                let polling = recorder.start(scenario, node, base: base, interval: .milliseconds(200))
                defer { polling.cancel() }

                // 1. Same clip again, within the grace period.
                let beforeKill = try await scenario.mediaPlaylist(node, "\(base)/src/index.m3u8")
                let lastBefore = try #require(beforeKill.complete.last?.sequence)
                first.send(signal: SIGKILL)
                try scenario.require(await first.waitForExit(timeout: .seconds(3)) == .signalled(SIGKILL), "publisher-1 did not die of SIGKILL")
                try await Task.sleep(for: .milliseconds(300))
                let second = try scenario.publish(media, to: node.rtmpURL("live", "cam"), name: "publisher-2", loop: true)
                scenario.note("publisher-1 killed after seg\(lastBefore); publisher-2 started")
                let afterReconnect = try await scenario.waitForSegments(node, base, count: 0, until: { $0.complete.last.map { $0.sequence >= lastBefore + 3 } ?? false })

                let classic = try await scenario.mediaPlaylist(node, "\(base)/src/index.m3u8")
                // The new publisher's first segment (the one open at the kill ends at its first
                // keyframe) says the media is not continuous, though the timeline is: one
                // discontinuity, in both playlists, at the same segment.
                let marked = classic.segments.filter(\.discontinuity).map(\.sequence)
                scenario.check(marked.count == 1 && marked.allSatisfy { (lastBefore + 1)...(lastBefore + 3) ~= $0 },
                               "the classic playlist marks \(marked) as discontinuities after seg\(lastBefore), expected one of seg\(lastBefore + 1)…\(lastBefore + 3):\n\(classic.text)")
                scenario.check(afterReconnect.segments.filter(\.discontinuity).map(\.sequence) == marked,
                               "the LL-HLS playlist marks \(afterReconnect.segments.filter(\.discontinuity).map(\.sequence)), the classic one \(marked):\n\(afterReconnect.text)")
                let reconnectBoundary = marked.first
                scenario.check(Set(afterReconnect.maps) == ["#EXT-X-MAP:URI=\"init0.mp4\""], "the LL-HLS playlist changed its map after a reconnect with the same codec parameters: \(afterReconnect.maps)")

                // Timestamps run on: each segment starts where the previous one ended, across the reconnect.
                var starts: [(sequence: Int, start: Double, duration: Double)] = []
                for segment in classic.complete where segment.sequence >= lastBefore - 1 {
                    let file = try await scenario.download(node, ["\(base)/src/seg\(segment.sequence).ts"], to: "seg\(segment.sequence).ts")
                    let video = try await scenario.packetTimes(file, stream: "video", name: "times-seg\(segment.sequence)")
                    guard let start = video.map(\.pts).min() else {
                        scenario.check(false, "seg\(segment.sequence).ts has no video")
                        continue
                    }
                    starts.append((segment.sequence, start, segment.duration ?? 0))
                }
                scenario.check(starts.count >= 4, "only \(starts.count) segments around the reconnect could be read")
                for (earlier, later) in zip(starts, starts.dropFirst()) {
                    scenario.check(later.start >= earlier.start, "seg\(later.sequence) starts at \(later.start) s, before seg\(earlier.sequence) (\(earlier.start) s)")
                    scenario.check(
                        abs(later.start - earlier.start - earlier.duration) <= 0.1,
                        "seg\(later.sequence) starts at \(later.start) s; seg\(earlier.sequence) started at \(earlier.start) s and lasts \(earlier.duration) s"
                    )
                }
                scenario.note("video start PTS across the reconnect: \(starts.map { "seg\($0.sequence)@\(String(format: "%.3f", $0.start))" }.joined(separator: " "))")

                // 2. A different resolution: a discontinuity and a new init section.
                second.send(signal: SIGKILL)
                _ = await second.waitForExit(timeout: .seconds(3))
                try await Task.sleep(for: .milliseconds(300))
                _ = try scenario.publish(small, to: node.rtmpURL("live", "cam"), name: "publisher-3", loop: true)
                let changed = try await scenario.waitForSegments(node, base, count: 0, until: { playlist in
                    playlist.complete.filter { $0.map == "init1.mp4" }.count >= 2
                })
                polling.cancel()
                await polling.value

                let boundary = try #require(changed.segments.first { $0.map == "init1.mp4" })
                scenario.check(boundary.discontinuity, "the first segment with init1.mp4 (seg\(boundary.sequence)) has no EXT-X-DISCONTINUITY before it:\n\(changed.text)")
                scenario.check(changed.maps.contains("#EXT-X-MAP:URI=\"init1.mp4\""), "no EXT-X-MAP for init1.mp4:\n\(changed.text)")
                let discontinuities = Set(changed.segments.filter(\.discontinuity).map(\.sequence))
                scenario.check(discontinuities.subtracting([reconnectBoundary].compactMap { $0 }) == [boundary.sequence],
                               "discontinuities at \(discontinuities.sorted()) in the LL-HLS playlist, expected seg\(boundary.sequence) (and the reconnect's):\n\(changed.text)")
                let classicChanged = try await scenario.mediaPlaylist(node, "\(base)/src/index.m3u8")
                scenario.check(
                    classicChanged.segments.first { $0.sequence == boundary.sequence }?.discontinuity == true,
                    "the classic playlist has no EXT-X-DISCONTINUITY before seg\(boundary.sequence):\n\(classicChanged.text)"
                )
                let newSegment = try #require(changed.complete.last { $0.map == "init1.mp4" })
                let transportStream = try await scenario.download(node, ["\(base)/src/seg\(newSegment.sequence).ts"], to: "new\(newSegment.sequence).ts")
                let fragmented = try await scenario.download(node, ["\(base)/src/init1.mp4", "\(base)/src/seg\(newSegment.sequence).m4s"], to: "new\(newSegment.sequence).mp4")
                for (label, file) in [("TS", transportStream), ("fMP4", fragmented)] {
                    let run = try await scenario.decodeWithFFmpeg(file.path, name: "decode-new-\(label)")
                    scenario.check(run.succeeded, "the \(label) segment after the resolution change does not decode: \(run)")
                    let (_, report) = try await scenario.probeStreams(file.path, name: "probe-new-\(label)")
                    scenario.check(report?.video?.width == small.width && report?.video?.height == small.height, "the \(label) segment after the change is \(report?.video?.width ?? 0)x\(report?.video?.height ?? 0), expected \(small.width ?? 0)x\(small.height ?? 0)")
                    scenario.check(report?.audio?.codecName == "aac", "the \(label) segment after the change has no AAC audio")
                }
                let master = try MasterPlaylist.parse(try await scenario.hlsGet(node, "\(base)/llhls.m3u8").bodyText)
                scenario.check(master.variants.first?.attributes["RESOLUTION"] == "\(small.width ?? 0)x\(small.height ?? 0)", "the master still says \(master.variants.first?.attributes["RESOLUTION"] ?? "nothing") after the change")

                // Over the whole test: every poll follows the rules, and sequence numbers never skip.
                scenario.check(recorder.errors.isEmpty, "polling failed: \(recorder.errors.prefix(5))")
                let seen = scenario.checkPolls(recorder.playlists(.lowLatency), variant: .lowLatency)
                scenario.checkPolls(recorder.playlists(.transportStream), variant: .transportStream)
                scenario.note("segments seen: \(seen.first ?? -1)…\(seen.last ?? -1); resolution change at seg\(boundary.sequence)")
            }
        }

        @Test("After the publisher stops and the grace period ends, both playlists end with EXT-X-ENDLIST and stay available")
        func endOfStream() async throws {
            try await Scenario.run("hls-end") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 2))
                let base = "/live/ending"
                let publisher = try scenario.publish(media, to: node.rtmpURL("live", "ending"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(node, "live", "ending")
                try await scenario.waitForSegments(node, base, count: 2)
                await publisher.stop()
                let stopped = ContinuousClock.now

                // Within the grace period the stream is still live.
                try await Task.sleep(for: .milliseconds(500))
                let during = try await scenario.mediaPlaylist(node, "\(base)/src/llhls.m3u8")
                scenario.check(!during.endList, "EXT-X-ENDLIST 0.5 s after the publisher left, within the 2 s grace period")

                var ended: [String: MediaPlaylist] = [:]
                let bothEnded = await eventually(timeout: .seconds(8), interval: .milliseconds(200)) {
                    for file in ["index.m3u8", "llhls.m3u8"] where ended[file] == nil {
                        if let response = try? await scenario.hlsGet(node, "\(base)/src/\(file)"), response.status == 200,
                           let playlist = try? MediaPlaylist.parse(response.bodyText), playlist.endList {
                            ended[file] = playlist
                        }
                    }
                    return ended.count == 2
                }
                try scenario.require(bothEnded, "not both playlists got EXT-X-ENDLIST within 8 s of the 2 s grace: \(ended.keys.sorted())")
                scenario.note("EXT-X-ENDLIST \(ContinuousClock.now - stopped) after the publisher stopped")
                for (file, playlist) in ended {
                    let variant: HLSPlaylistChecker.Variant = file == "index.m3u8" ? .transportStream : .lowLatency
                    scenario.checkPlaylist(playlist, variant: variant, "ended \(file)")
                    scenario.check(playlist.text.hasSuffix("#EXT-X-ENDLIST\n"), "ended \(file) does not end with #EXT-X-ENDLIST:\n\(playlist.text)")
                    scenario.check(playlist.segments.allSatisfy { $0.duration != nil }, "ended \(file) still lists an open segment:\n\(playlist.text)")
                }

                // A blocking reload past the end is answered at once, not held.
                let lowLatency = try #require(ended["llhls.m3u8"])
                let last = try #require(lowLatency.complete.last)
                let start = ContinuousClock.now
                let blocked = try await scenario.hlsGet(node, "\(base)/src/llhls.m3u8?_HLS_msn=\(last.sequence + 1)&_HLS_part=0")
                scenario.check(ContinuousClock.now - start < .seconds(1), "a blocking reload past the end of the stream was held \(ContinuousClock.now - start)")
                scenario.check(blocked.status == 200 && blocked.bodyText.contains("#EXT-X-ENDLIST"), "a blocking reload past the end answered \(blocked.status):\n\(blocked.bodyText)")

                // Still there a while later: playlists, masters and segments.
                try await Task.sleep(for: .seconds(3))
                for path in ["\(base)/index.m3u8", "\(base)/llhls.m3u8", "\(base)/src/index.m3u8", "\(base)/src/llhls.m3u8", "\(base)/src/seg\(last.sequence).ts", "\(base)/src/seg\(last.sequence).m4s"] {
                    let response = try await scenario.hlsGet(node, path)
                    scenario.check(response.status == 200, "GET \(path) answered \(response.status) 3 s after the end of the stream")
                    if path.hasSuffix("src/llhls.m3u8") || path.hasSuffix("src/index.m3u8") {
                        scenario.check(response.bodyText.contains("#EXT-X-ENDLIST"), "\(path) lost its EXT-X-ENDLIST")
                    }
                }
                let run = try await scenario.decodeWithFFmpeg("\(node.httpBase)\(base)/index.m3u8", name: "ffmpeg-ended")
                scenario.check(run.succeeded, "ffmpeg cannot play the ended classic stream: \(run)")
            }
        }

        @Test("Audio-only and video-only streams have valid playlists that list only their codec")
        func singleTrack() async throws {
            try await Scenario.run("hls-single-track") { scenario in
                let audio = try await MediaLibrary.shared.file(.audioOnly)
                let video = try await MediaLibrary.shared.file(.gopVideoOnly)
                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 2))
                _ = try scenario.publish(audio, to: node.rtmpURL("live", "radio"), name: "publisher-audio", loop: true)
                _ = try scenario.publish(video, to: node.rtmpURL("live", "silent"), name: "publisher-video", loop: true)
                try await scenario.waitUntilLive(node, "live", "radio")
                try await scenario.waitUntilLive(node, "live", "silent")
                try await scenario.waitForSegments(node, "/live/radio", count: 3)
                try await scenario.waitForSegments(node, "/live/silent", count: 3)

                for (stream, media, hasVideo) in [("radio", audio, false), ("silent", video, true)] {
                    let base = "/live/\(stream)"
                    let codecs = try media.codecStrings()
                    scenario.check(codecs.count == 1, "\(stream): the clip has codecs \(codecs)")
                    let expected = HLSPlaylistChecker.ExpectedVariant(
                        codecs: codecs.joined(separator: ","),
                        width: hasVideo ? media.width : nil,
                        height: hasVideo ? media.height : nil,
                        frameRate: hasVideo ? 30 : nil
                    )
                    for (file, variant) in [("index.m3u8", HLSPlaylistChecker.Variant.transportStream), ("llhls.m3u8", .lowLatency)] {
                        let master = try MasterPlaylist.parse(try await scenario.hlsGet(node, "\(base)/\(file)").bodyText)
                        let masterProblems = HLSPlaylistChecker.checkMaster(master, mediaPlaylist: file, expected: expected)
                        scenario.check(masterProblems.isEmpty, "\(stream) master \(file):\n- \(masterProblems.joined(separator: "\n- "))\n\(master.text)")
                        let playlist = try await scenario.mediaPlaylist(node, "\(base)/src/\(file)")
                        scenario.checkPlaylist(playlist, variant: variant, "\(stream) \(file)")

                        let (run, report) = try await scenario.probeStreams("\(node.httpBase)\(base)/\(file)", name: "probe-\(stream)-\(file)")
                        guard scenario.check(run.succeeded, "ffprobe of \(stream) \(file) failed: \(run)"), let report else { continue }
                        if hasVideo {
                            scenario.checkVideo(report, width: media.width, height: media.height, "\(stream) \(file)")
                            scenario.check(report.audio == nil, "\(stream) \(file): an audio stream in a video-only stream")
                        } else {
                            scenario.checkAudio(report, "\(stream) \(file)")
                            scenario.check(report.video == nil, "\(stream) \(file): a video stream in an audio-only stream")
                        }
                    }
                    // One segment of each variant decodes on its own.
                    let lowLatency = try await scenario.mediaPlaylist(node, "\(base)/src/llhls.m3u8")
                    let segment = try #require(lowLatency.complete.last)
                    let transportStream = try await scenario.download(node, ["\(base)/src/seg\(segment.sequence).ts"], to: "\(stream)-seg.ts")
                    let fragmented = try await scenario.download(node, ["\(base)/src/\(segment.map ?? "init0.mp4")", "\(base)/src/seg\(segment.sequence).m4s"], to: "\(stream)-seg.mp4")
                    for file in [transportStream, fragmented] {
                        let run = try await scenario.decodeWithFFmpeg(file.path, name: "decode-\(file.lastPathComponent)")
                        scenario.check(run.succeeded, "\(file.lastPathComponent) does not decode: \(run)")
                    }
                }
            }
        }
    }
}
