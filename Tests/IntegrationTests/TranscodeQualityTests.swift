import AMF0
import Foundation
import TestSupport
import RTMP
import NIOCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension IntegrationTests {
    /// What a viewer of a rendition sees, beyond sizes and keyframes (`TranscodeTests`):
    /// the rung's bit rate and frame rate, sync with the source, a source changing
    /// resolution, damaged source video, non-AAC source audio, and the lag metric.
    @Suite("ABR transcoding quality")
    struct TranscodeQualityTests {
        @Test("Each rung holds its bit rate (±20 % over 10 s) and the source's frame rate, with the source's exact audio and video timestamps")
        func bitRateFrameRateAndSync() async throws {
            try await Scenario.run("transcode-rate") { scenario in
                let media = try await MediaLibrary.shared.file(.noisyGOPAudioVideo)
                let source = try await Self.packets(of: media.url.path, scenario: scenario)
                let sourceVideo = Set(source.packets(of: source.video).compactMap(\.pts))
                let sourceAudio = Set(source.packets(of: source.audio).compactMap(\.pts))
                try scenario.require(sourceVideo.count >= 500 && sourceAudio.count >= 600, "the source clip is too short: \(sourceVideo.count) video, \(sourceAudio.count) audio packets")

                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1))
                _ = try scenario.publish(media, to: node.rtmpURL("abr", "rate"), name: "publisher")
                try await scenario.waitUntilLive(node, "abr", "rate_360p", timeout: .seconds(15))
                try await scenario.waitUntilLive(node, "abr", "rate_240p", timeout: .seconds(15))
                let probes = [
                    ("360p", 800_000, try scenario.startProbe(node.flvURL("abr", "rate_360p"), name: "probe-360p")),
                    ("240p", 400_000, try scenario.startProbe(node.flvURL("abr", "rate_240p"), name: "probe-240p")),
                ]

                // While it runs, the lag metric describes the stream and stays small.
                var lag: Double?
                var encoded = 0.0
                let reported = await eventually(timeout: .seconds(8), interval: .milliseconds(500)) {
                    guard let metrics = try? await node.metrics() else { return false }
                    lag = metrics.lines.first { $0.name == "estuary_transcode_lag_seconds" && $0.labels["stream"] == "abr/rate" }?.value
                    encoded = metrics.sum("estuary_transcode_encoded_frames_total")
                    return lag != nil && encoded > 60
                }
                scenario.check(reported, "no estuary_transcode_lag_seconds{stream=\"abr/rate\"} sample, or no encoded frames (\(encoded))")
                scenario.check((lag ?? 99) < 2, "the transcoder lags \(lag ?? -1) s behind a real-time source")

                for (label, target, probe) in probes {
                    guard let report = try await scenario.finishProbe(probe, timeout: .seconds(40)) else { continue }
                    let video = report.packets(of: report.video).filter { $0.pts != nil }
                    let audio = report.packets(of: report.audio).filter { $0.pts != nil }
                    guard let firstKey = video.first(where: \.isKeyframe)?.pts else {
                        scenario.check(false, "\(label): no keyframe")
                        continue
                    }
                    // 10 s from one second after the first keyframe: rate control has settled.
                    let window = (firstKey + 1000)..<(firstKey + 11000)
                    let inWindow = video.filter { window.contains($0.pts ?? -1) }
                    let bitRate = Double(inWindow.reduce(0) { $0 + $1.bytes } * 8) / 10
                    scenario.check(abs(bitRate - Double(target)) <= 0.2 * Double(target),
                                   "\(label): \(Int(bitRate / 1000)) kbit/s over 10 s, expected \(target / 1000) ± 20 %")
                    scenario.check((video.last?.pts ?? 0) >= window.upperBound, "\(label): the viewer saw less than 11 s after the first keyframe")
                    scenario.check(abs(inWindow.count - 300) <= 3, "\(label): \(inWindow.count) frames in 10 s, expected 300 (30 fps)")
                    // Sync: every frame of the rung sits at a source frame's time, audio and video alike.
                    let strayVideo = video.compactMap(\.pts).filter { pts in !(-1...1).contains { sourceVideo.contains(pts + $0) } }
                    let strayAudio = audio.compactMap(\.pts).filter { !sourceAudio.contains($0) }
                    scenario.check(strayVideo.isEmpty, "\(label): \(strayVideo.count) video frames off the source's times, first \(strayVideo.prefix(5))")
                    scenario.check(audio.count > 300 && strayAudio.isEmpty, "\(label): \(audio.count) audio frames, \(strayAudio.count) off the source's times")
                    scenario.note("\(label): \(Int(bitRate / 1000)) kbit/s, \(inWindow.count) frames in the 10 s window")
                }
            }
        }

        @Test("A source that changes resolution mid-stream keeps its rung viewers attached, at the rung's size, with continuous timestamps")
        func resolutionChange() async throws {
            try await Scenario.run("transcode-resize") { scenario in
                let large = try await MediaLibrary.shared.file(.gopAudioVideo)
                let small = try await MediaLibrary.shared.file(.gopSmallAudioVideo)
                // 180p from a 640x360 source and from a 320x180 one is 320x180 both times.
                let ladder = [NodeConfig.Rung(name: "180p", height: 180, videoBitRate: 300_000)]
                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 4, ladders: ["abr": ladder]))
                let first = try scenario.publish(large, to: node.rtmpURL("abr", "cam"), name: "publisher-1", loop: true)
                try await scenario.waitUntilLive(node, "abr", "cam_180p", timeout: .seconds(15))
                let recording = scenario.file("cam_180p.flv")
                let viewer = try scenario.launch("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-i", node.flvURL("abr", "cam_180p"), "-c", "copy", "-f", "flv", recording.path], name: "viewer")
                try await Task.sleep(for: .seconds(3))
                first.send(signal: SIGKILL)
                _ = await first.waitForExit(timeout: .seconds(3))
                try await Task.sleep(for: .milliseconds(300))
                _ = try scenario.publish(small, to: node.rtmpURL("abr", "cam"), name: "publisher-2")
                // The small clip runs 6 s; the stream ends 4 s later.
                let run = await viewer.finish(timeout: .seconds(40))
                try scenario.require(run.succeeded, "the rung viewer failed or was cut off: \(run)")

                let (decoded, report) = try await scenario.decodeCheck(recording, name: "decode-rung")
                scenario.check(decoded.succeeded && decoded.stderr.isEmpty, "the recorded rung does not decode cleanly: \(decoded)")
                let (_, streams) = try await scenario.probeStreams(recording.path, name: "probe-rung")
                scenario.check(streams?.video?.width == 320 && streams?.video?.height == 180, "the rung is \(streams?.video?.width ?? 0)x\(streams?.video?.height ?? 0), expected 320x180")
                // Frames from both publishers: about 3 s of the first and the 6 s of the second.
                let frames = report?.video?.readFrames ?? 0
                scenario.check(frames >= 220, "the viewer decoded \(frames) frames, expected about 3 s + 6 s at 30 fps")

                let flv = FLVStream.parse([UInt8](try Data(contentsOf: recording)))
                scenario.check(flv.timestampRegressions().isEmpty, "rung timestamps went backwards: \(flv.timestampRegressions().prefix(3))")
                let times = flv.videoFrames.map { Int($0.timestamp) }
                let gaps = zip(times, times.dropFirst()).map { $1 - $0 }.filter { $0 > 700 }
                scenario.check(gaps.isEmpty, "the rung's video has gaps over 700 ms: \(gaps)")
                // The rung describes itself, not the source.
                if let script = flv.tags.first(where: { $0.type == FLVTag.script }) {
                    var buffer = ByteBuffer(bytes: script.data)
                    let values = (try? AMF0Decoder().decodeAll(from: &buffer)) ?? []
                    let metadata = values.count >= 2 ? values[1] : nil
                    scenario.check(metadata?["width"]?.numberValue == 320 && metadata?["height"]?.numberValue == 180,
                                   "the rung's onMetaData is not 320x180: \(values)")
                    scenario.check(metadata?["videodatarate"]?.numberValue == 300, "the rung's onMetaData bit rate: \(values)")
                } else {
                    scenario.check(false, "the rung has no onMetaData")
                }
                let configurations = flv.tags.filter(\.isAVCSequenceHeader).count
                scenario.check(configurations >= 1, "no AVC sequence header in the rung")
                scenario.check(node.log.contains("source=640x360") && node.log.contains("source=320x180"),
                               "the node did not log both source sizes:\n\(tail(node.log, lines: 20))")
            }
        }

        @Test("Damaged source video is skipped and counted; the rungs stay decodable and the node and other streams carry on")
        func corruptSourceVideo() async throws {
            try await Scenario.run("transcode-corrupt") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let damaged = scenario.file("damaged.flv")
                let (garbled, broken) = try Self.damage(media.url, into: damaged)
                scenario.note("garbled \(garbled) frames' slice data, broke the NAL framing of \(broken)")

                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1))
                // A healthy stream beside it.
                _ = try scenario.publish(media, to: node.rtmpURL("abr", "healthy"), name: "healthy-publisher", loop: true)
                let publisher = try await RTMPRawClient.connect(port: node.rtmpPort)
                scenario.track(publisher.connection)
                let streamID = try await publisher.startPublishing(app: "abr", name: "damaged")
                async let streamed = publisher.streamFLV(damaged, streamID: streamID)
                try await scenario.waitUntilLive(node, "abr", "damaged_240p", timeout: .seconds(15))
                let recording = scenario.file("damaged_240p.flv")
                let viewer = try scenario.launch("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-i", node.flvURL("abr", "damaged_240p"), "-c", "copy", "-f", "flv", recording.path], name: "viewer")
                _ = try await streamed
                await publisher.connection.close()
                let run = await viewer.finish(timeout: .seconds(30))
                scenario.check(run.succeeded, "the rung viewer failed: \(run)")

                let metrics = try await node.metrics()
                let corrupt = metrics.sum("estuary_transcode_dropped_frames_total", labels: ["reason": "corrupt"])
                scenario.check(corrupt >= Double(broken), "estuary_transcode_dropped_frames_total{reason=\"corrupt\"} is \(corrupt), expected at least the \(broken) frames with broken framing")
                scenario.check(node.log.contains("skipping corrupt video frame"), "the node did not log the corrupt frames")
                let (decoded, report) = try await scenario.decodeCheck(recording, name: "decode-rung")
                scenario.check(decoded.succeeded && decoded.stderr.isEmpty, "the rung of a damaged source does not decode cleanly: \(decoded)")
                scenario.check((report?.video?.readFrames ?? 0) >= 150, "the rung viewer decoded only \(report?.video?.readFrames ?? 0) frames")
                // The node and the healthy stream's rung are unaffected.
                let health = try await scenario.hlsGet(node, "/healthz")
                scenario.check(health.status == 200, "/healthz answered \(health.status)")
                try await scenario.waitUntilLive(node, "abr", "healthy_240p", timeout: .seconds(5))
            }
        }

        @Test("MP3 source audio reaches every rung as AAC, at the source's pace, and the master playlist says so")
        func mp3SourceAudio() async throws {
            try await Scenario.run("transcode-mp3") { scenario in
                let media = try await MediaLibrary.shared.file(.gopVideoMP3)
                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1))
                _ = try scenario.publish(media, to: node.rtmpURL("abr", "mp3"), name: "publisher")
                try await scenario.waitUntilLive(node, "abr", "mp3_240p", timeout: .seconds(15))
                let probe = try scenario.startProbe(node.flvURL("abr", "mp3_240p"), name: "probe-240p")
                let listed = await eventually(timeout: .seconds(10), interval: .milliseconds(250)) {
                    guard let master = try? await scenario.hlsGet(node, "/abr/mp3/index.m3u8"), master.status == 200 else { return false }
                    return master.bodyText.contains("240p/index.m3u8")
                }
                scenario.check(listed, "the master playlist never listed the 240p rung")
                if let master = try? await scenario.hlsGet(node, "/abr/mp3/index.m3u8") {
                    let rung = master.bodyText.split(separator: "\n").enumerated().first { $0.element.hasPrefix("240p/") }
                    let entry = rung.map { master.bodyText.split(separator: "\n")[$0.offset - 1] } ?? ""
                    scenario.check(entry.contains("mp4a.40.2"), "the 240p entry does not announce AAC: \(entry)")
                }
                guard let report = try await scenario.finishProbe(probe, timeout: .seconds(30)) else { return }
                scenario.check(report.audio?.codecName == "aac", "rung audio is \(report.audio?.codecName ?? "none"), expected aac")
                scenario.check(report.audio?.sampleRate == "44100" && report.audio?.channels == 2, "rung audio is \(report.audio?.sampleRate ?? "?") Hz \(report.audio?.channels ?? 0) ch")
                let audio = report.packets(of: report.audio).compactMap(\.pts)
                let video = report.packets(of: report.video).compactMap(\.pts)
                guard let firstVideo = video.min(), let lastVideo = video.max(), let firstAudio = audio.min(), let lastAudio = audio.max() else {
                    scenario.check(false, "the rung has no audio or no video")
                    return
                }
                // AAC frames are 1024 samples (23.2 ms): the audio covers the video's span.
                let expected = Double(lastVideo - firstVideo) / 1000 * 44100 / 1024
                scenario.check(abs(Double(audio.count) - expected) <= 0.05 * expected + 3, "\(audio.count) AAC frames over \(lastVideo - firstVideo) ms of video, expected about \(Int(expected))")
                scenario.check(abs(firstAudio - firstVideo) <= 100 && abs(lastAudio - lastVideo) <= 100,
                               "audio spans \(firstAudio)...\(lastAudio) ms, video \(firstVideo)...\(lastVideo) ms")
                scenario.check(zip(audio, audio.dropFirst()).allSatisfy { $0 < $1 }, "AAC timestamps not increasing")
            }
        }

        /// Every packet of a file, for comparing a rendition's timestamps with its source's.
        static func packets(of path: String, scenario: Scenario) async throws -> ProbeReport {
            let run = try await scenario.run(
                "ffprobe",
                ["-v", "error", "-show_entries", "stream=index,codec_type:packet=stream_index,dts,pts,flags,size", "-of", "json", path],
                name: "source-packets",
                timeout: .seconds(20)
            )
            try scenario.require(run.succeeded, "ffprobe of the source failed: \(run)")
            return try ProbeReport.decode(run.stdout)
        }

        /// A copy of `file` with damaged video: every 7th inter frame gets garbage slice data
        /// behind an intact NAL length (libavcodec decodes it with errors, or rejects it), and
        /// every 13th gets a NAL length that overruns the frame (rejected before decoding).
        /// Returns how many frames of each kind were damaged.
        static func damage(_ file: URL, into output: URL) throws -> (garbled: Int, broken: Int) {
            var bytes = [UInt8](try Data(contentsOf: file))
            let flv = FLVStream.parse(bytes)
            guard flv.error == nil else { throw IntegrationFailure("cannot parse \(file.path): \(flv.error ?? "")") }
            var garbled = 0
            var broken = 0
            var interFrames = 0
            for tag in flv.tags where tag.isVideo && tag.isMediaFrame && !tag.isKeyframe && tag.data.count > 40 {
                interFrames += 1
                let start = tag.data.startIndex
                if interFrames % 13 == 0 {
                    // AVC packet: 5-byte header, then the first NAL unit's 4-byte length.
                    for offset in 5..<9 { bytes[start + offset] = 0x7F }
                    broken += 1
                } else if interFrames % 7 == 0 {
                    for index in (start + 12)..<tag.data.endIndex { bytes[index] ^= UInt8(truncatingIfNeeded: index &* 131) }
                    garbled += 1
                }
            }
            try Data(bytes).write(to: output)
            return (garbled, broken)
        }
    }
}
