import Foundation
import TestSupport
import RTMP
import Testing

extension IntegrationTests {
    @Suite("Playback")
    struct PlaybackTests {
        @Test("H.264+AAC played over RTMP and HTTP-FLV matches what was published")
        func rtmpAndHTTPFLVMatchTheSource() async throws {
            try await Scenario.run("playback") { scenario in
                let media = try await MediaLibrary.shared.file(.audioVideo)
                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1))
                let publisher = try scenario.publish(media, to: node.rtmpURL("live", "demo"), name: "publisher")
                try await scenario.waitUntilLive(node, "live", "demo")

                async let overRTMP = scenario.probe(node.rtmpURL("live", "demo"), name: "probe-rtmp")
                async let overHTTP = scenario.probe(node.flvURL("live", "demo"), name: "probe-flv")
                let viewers = [("RTMP", try await overRTMP), ("HTTP-FLV", try await overHTTP)]

                for (label, report) in viewers {
                    guard let report else { continue }
                    scenario.checkAudioVideo(report, matches: media, label)
                }
                let published = await publisher.waitForExit(timeout: .seconds(5))
                scenario.check(published == .exited(0), "publisher ffmpeg ended with \(published.map(\.description) ?? "no exit"): \(tail(publisher.stderrText, lines: 10))")
            }
        }

        @Test("rtmpdump (librtmp) plays the stream into a decodable FLV file")
        func rtmpdumpPlays() async throws {
            try await Scenario.run("rtmpdump") { scenario in
                let media = try await MediaLibrary.shared.file(.audioVideo)
                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1))
                _ = try scenario.publish(media, to: node.rtmpURL("live", "dump"), name: "publisher")
                try await scenario.waitUntilLive(node, "live", "dump")

                let output = scenario.file("rtmpdump.flv")
                let dump = try await scenario.run(
                    "rtmpdump",
                    ["-r", node.rtmpURL("live", "dump"), "-o", output.path, "--live", "-m", "5"],
                    name: "rtmpdump",
                    timeout: .seconds(20)
                )
                scenario.check(!dump.timedOut, "rtmpdump did not end within 20 s of a 6 s stream: \(dump)")
                let size = fileSize(output)
                try scenario.require(size > 0, "rtmpdump wrote nothing: \(dump)")

                let (decode, report) = try await scenario.decodeCheck(output, name: "decode-rtmpdump")
                scenario.check(decode.succeeded, "decoding the rtmpdump file failed: \(decode)")
                scenario.check(decode.stderr.isEmpty, "decoding the rtmpdump file reported errors:\n\(tail(decode.stderr, lines: 15))")
                scenario.check(report?.video?.codecName == "h264", "rtmpdump file video codec \(report?.video?.codecName ?? "none"), expected h264")
                scenario.check(report?.audio?.codecName == "aac", "rtmpdump file audio codec \(report?.audio?.codecName ?? "none"), expected aac")
                scenario.check((report?.video?.readFrames ?? 0) > 0, "rtmpdump file has no decodable video frames")
                scenario.check((report?.audio?.readFrames ?? 0) > 0, "rtmpdump file has no decodable audio frames")
                scenario.note("rtmpdump: \(dump.termination.map(\.description) ?? "timed out"), \(size) bytes, video frames \(report?.video?.readFrames ?? 0), audio frames \(report?.audio?.readFrames ?? 0)")
            }
        }

        @Test("An unknown stream: HTTP-FLV 404 at once with CORS, RTMP play gets StreamNotFound")
        func unknownStream() async throws {
            try await Scenario.run("unknown-stream") { scenario in
                let node = try await scenario.startNode()

                let start = ContinuousClock.now
                let response = try await HTTPClient.get(port: node.httpPort, path: "/live/nothing-here.flv", timeout: .seconds(3))
                let elapsed = ContinuousClock.now - start
                scenario.check(response.status == 404, "GET /live/nothing-here.flv answered \(response.status), expected 404")
                scenario.check(elapsed < .seconds(1), "the 404 took \(elapsed)")
                scenario.check(
                    response.header("Access-Control-Allow-Origin") == "*",
                    "404 lacks Access-Control-Allow-Origin: * (headers: \(response.headers))"
                )

                let probe = try await scenario.run(
                    "ffprobe",
                    ["-v", "error", "-show_streams", node.rtmpURL("live", "nothing-here")],
                    name: "probe-unknown",
                    timeout: .seconds(15)
                )
                scenario.check(!probe.timedOut && !probe.succeeded, "ffprobe of an unknown RTMP stream should fail: \(probe)")
                scenario.check(probe.elapsed < .seconds(5), "ffprobe of an unknown RTMP stream took \(probe.elapsed) to fail")

                let client = try await RTMPRawClient.connect(port: node.rtmpPort)
                scenario.track(client.connection)
                try await client.plainHandshake()
                try await client.connect(app: "live")
                let streamID = try await client.createStream()
                let code = try await client.play(name: "nothing-here", streamID: streamID)
                scenario.check(code == "NetStream.Play.StreamNotFound", "play of an unknown stream answered \(code)")
            }
        }

        /// The publisher announces the stream first and the viewers attach before its first frame,
        /// so every frame sent must reach them: an audio-only stream has no keyframe to cache from.
        @Test(
            "Audio-only and video-only streams play over RTMP and HTTP-FLV with every frame",
            arguments: [MediaKind.audioOnly, MediaKind.videoOnly]
        )
        func singleTrack(kind: MediaKind) async throws {
            try await Scenario.run("single-track-\(kind.rawValue)") { scenario in
                let media = try await MediaLibrary.shared.file(kind)
                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1))
                let publisher = try await RTMPRawClient.connect(port: node.rtmpPort)
                scenario.track(publisher.connection)
                let streamID = try await publisher.startPublishing(app: "live", name: "solo")
                try await scenario.waitUntilLive(node, "live", "solo")

                // Attach one RTMP and one HTTP-FLV viewer, and wait until the node has both.
                _ = await eventually(timeout: .seconds(2), interval: .milliseconds(50)) {
                    (try? await node.metrics().sum("estuary_httpflv_viewers")) == 0
                }
                let playsBefore = try await node.metrics().sum("estuary_rtmp_plays_total")
                let viewers = [
                    ("RTMP", try scenario.startProbe(node.rtmpURL("live", "solo"), name: "probe-rtmp")),
                    ("HTTP-FLV", try scenario.startProbe(node.flvURL("live", "solo"), name: "probe-flv")),
                ]
                var metrics: PrometheusSample?
                let attached = await eventually(timeout: .seconds(5), interval: .milliseconds(50)) {
                    metrics = try? await node.metrics()
                    guard let metrics else { return false }
                    return metrics.sum("estuary_rtmp_plays_total") >= playsBefore + 1 && metrics.sum("estuary_httpflv_viewers") >= 1
                }
                try scenario.require(
                    attached,
                    "the viewers did not attach within 5 s: \(metrics?.describe("estuary_rtmp_plays_total") ?? "") \(metrics?.describe("estuary_httpflv_viewers") ?? "")"
                )

                let sent = try await publisher.streamFLV(media.url, streamID: streamID)
                await publisher.close()
                scenario.note("sent \(sent.audio) audio and \(sent.video) video frames")

                let deadline = ContinuousClock.now + .seconds(20)
                for (label, process) in viewers {
                    let remaining = max(deadline - ContinuousClock.now, .milliseconds(100))
                    guard let report = try await scenario.finishProbe(process, timeout: remaining) else { continue }
                    let name = "\(kind.rawValue) \(label)"
                    if kind == .audioOnly {
                        scenario.checkAudio(report, name)
                        scenario.checkWithinOnePercent(report.packets(of: report.audio).count, of: media.audioFrames, "\(name) audio frames")
                        scenario.check(report.packets(of: report.video).isEmpty, "\(name): \(report.packets(of: report.video).count) video packets in an audio-only stream")
                        scenario.check(report.dtsRegressions(of: report.audio).isEmpty, "\(name): audio DTS goes backwards: \(report.dtsRegressions(of: report.audio).prefix(5))")
                    } else {
                        scenario.checkVideo(report, width: media.width, height: media.height, name)
                        scenario.checkWithinOnePercent(report.packets(of: report.video).count, of: media.videoFrames, "\(name) video frames")
                        scenario.check(report.packets(of: report.audio).isEmpty, "\(name): \(report.packets(of: report.audio).count) audio packets in a video-only stream")
                        scenario.check(report.dtsRegressions(of: report.video).isEmpty, "\(name): video DTS goes backwards: \(report.dtsRegressions(of: report.video).prefix(5))")
                        scenario.check(report.packets(of: report.video).first?.isKeyframe == true, "\(name): first video packet is not a keyframe")
                    }
                }
            }
        }
    }
}

extension Scenario {
    /// Codec, profile, size, audio format, frame counts (within 1%) and DTS order of an H.264+AAC playback.
    func checkAudioVideo(_ report: ProbeReport, matches media: MediaFile, _ label: String, sourceLocation: SourceLocation = #_sourceLocation) {
        self.checkVideo(report, width: media.width, height: media.height, label, sourceLocation: sourceLocation)
        self.checkAudio(report, label, sourceLocation: sourceLocation)
        let video = report.packets(of: report.video)
        let audio = report.packets(of: report.audio)
        self.checkWithinOnePercent(video.count, of: media.videoFrames, "\(label) video frames", sourceLocation: sourceLocation)
        self.checkWithinOnePercent(audio.count, of: media.audioFrames, "\(label) audio frames", sourceLocation: sourceLocation)
        self.check(video.first?.isKeyframe == true, "\(label): first video packet is not a keyframe", sourceLocation: sourceLocation)
        self.check(report.dtsRegressions(of: report.video).isEmpty, "\(label): video DTS goes backwards: \(report.dtsRegressions(of: report.video).prefix(5))", sourceLocation: sourceLocation)
        self.check(report.dtsRegressions(of: report.audio).isEmpty, "\(label): audio DTS goes backwards: \(report.dtsRegressions(of: report.audio).prefix(5))", sourceLocation: sourceLocation)
    }

    func checkVideo(_ report: ProbeReport, width: Int?, height: Int?, _ label: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let video = report.video
        self.check(video?.codecName == "h264", "\(label): video codec \(video?.codecName ?? "none"), expected h264", sourceLocation: sourceLocation)
        self.check(video?.profile == "Main", "\(label): H.264 profile \(video?.profile ?? "none"), expected Main", sourceLocation: sourceLocation)
        self.check(
            video?.width == width && video?.height == height && width != nil,
            "\(label): \(video?.width ?? 0)x\(video?.height ?? 0), expected \(width ?? 0)x\(height ?? 0)",
            sourceLocation: sourceLocation
        )
    }

    func checkAudio(_ report: ProbeReport, _ label: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let audio = report.audio
        self.check(audio?.codecName == "aac", "\(label): audio codec \(audio?.codecName ?? "none"), expected aac", sourceLocation: sourceLocation)
        self.check(audio?.sampleRate == "44100", "\(label): sample rate \(audio?.sampleRate ?? "none"), expected 44100", sourceLocation: sourceLocation)
        self.check(audio?.channels == 2, "\(label): \(audio?.channels ?? 0) channels, expected 2", sourceLocation: sourceLocation)
    }
}
