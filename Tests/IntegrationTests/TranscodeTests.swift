import Foundation
import Testing

extension IntegrationTests {
    @Suite("ABR transcoding")
    struct TranscodeTests {
        @Test("A stream published to abr plays in every rung at the ladder's size, with keyframes at the source's, listed in the HLS master")
        func ladderRungsPlayEverywhere() async throws {
            try await Scenario.run("transcode") { scenario in
                // 640x360 with 2 s GOPs: the default ladder gives 360p (640x360) and 240p (426x240).
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let sourceKeyframes = try await Self.keyframeTimes(of: media.url.path, scenario: scenario)
                try scenario.require(sourceKeyframes.count >= 5, "the source clip has \(sourceKeyframes.count) keyframes, expected one every 2 s")

                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1))
                _ = try scenario.publish(media, to: node.rtmpURL("abr", "t"), name: "publisher")
                try await scenario.waitUntilLive(node, "abr", "t")
                try await scenario.waitUntilLive(node, "abr", "t_360p", timeout: .seconds(15))
                try await scenario.waitUntilLive(node, "abr", "t_240p", timeout: .seconds(15))

                async let rung360 = scenario.probe(node.flvURL("abr", "t_360p"), name: "probe-360p-flv", timeout: .seconds(40))
                async let rung240 = scenario.probe(node.rtmpURL("abr", "t_240p"), name: "probe-240p-rtmp", timeout: .seconds(40))

                // While the stream runs, the master playlists list every rung with its size.
                let listed = await eventually(timeout: .seconds(10), interval: .milliseconds(250)) {
                    guard let master = try? await scenario.hlsGet(node, "/abr/t/index.m3u8"), master.status == 200 else { return false }
                    return master.bodyText.contains("240p/index.m3u8") && master.bodyText.contains("360p/index.m3u8")
                }
                scenario.check(listed, "the HLS master playlist never listed the 360p and 240p rungs")
                if let master = try? await scenario.hlsGet(node, "/abr/t/index.m3u8") {
                    let text = master.bodyText
                    scenario.check(text.contains("RESOLUTION=640x360,FRAME-RATE=30.000\n360p/index.m3u8"), "360p rung entry is wrong:\n\(text)")
                    scenario.check(text.contains("RESOLUTION=426x240,FRAME-RATE=30.000\n240p/index.m3u8"), "240p rung entry is wrong:\n\(text)")
                    scenario.check(!text.contains("720p") && !text.contains("480p"), "rungs above the 360p source must be skipped:\n\(text)")
                    for line in text.split(separator: "\n") where line.hasPrefix("#EXT-X-STREAM-INF") {
                        scenario.check(line.contains("CODECS=\"avc1.") && line.contains(",mp4a.40.2\""), "rendition entry without H.264 + AAC codecs: \(line)")
                    }
                }

                for (label, report, width, height) in [("360p", try await rung360, 640, 360), ("240p", try await rung240, 426, 240)] {
                    guard let report else { continue }
                    scenario.check(report.video?.codecName == "h264", "\(label): video codec \(report.video?.codecName ?? "none"), expected h264")
                    scenario.check(report.video?.width == width && report.video?.height == height,
                                   "\(label): \(report.video?.width ?? 0)x\(report.video?.height ?? 0), expected \(width)x\(height)")
                    scenario.check(report.audio?.codecName == "aac", "\(label): audio codec \(report.audio?.codecName ?? "none"), expected the source's AAC")
                    let video = report.packets(of: report.video)
                    let keyframes = video.filter(\.isKeyframe).compactMap(\.pts)
                    guard let first = video.compactMap(\.pts).min(), let last = video.compactMap(\.pts).max() else {
                        scenario.check(false, "\(label): no video packets")
                        continue
                    }
                    scenario.check(video.count >= 90, "\(label): only \(video.count) video frames")
                    scenario.check(video.first?.isKeyframe == true, "\(label): the first video frame is not a keyframe")
                    // Every rung keyframe sits on a source keyframe, and every source keyframe in the
                    // received range is a rung keyframe: the GOPs of all rungs line up.
                    let stray = keyframes.filter { key in !sourceKeyframes.contains { abs($0 - key) <= 1 } }
                    scenario.check(stray.isEmpty, "\(label): keyframes not at source keyframes: \(stray) (source: \(sourceKeyframes))")
                    let expected = sourceKeyframes.filter { $0 >= first && $0 <= last }
                    let missing = expected.filter { key in !keyframes.contains { abs($0 - key) <= 1 } }
                    scenario.check(missing.isEmpty, "\(label): source keyframes without a rung keyframe: \(missing) (rung keyframes: \(keyframes))")
                    scenario.check(report.dtsRegressions(of: report.video).isEmpty, "\(label): video DTS went backwards")
                    scenario.note("\(label): \(video.count) video frames, keyframes at \(keyframes)")
                }
            }
        }

        /// Issue 23: a rung at the source's size was encoded above the source's bit rate (a
        /// 360p source at 0.79 Mbit/s gave a 360p rung at 1.0 Mbit/s). Rungs are capped at the
        /// source's measured bit rate once 4 s of it are measured.
        @Test("A rung is never encoded above the source's bit rate: a 360p source at 300 kbit/s gives a 360p rung of the same rate, not the ladder's 800")
        func rungsAreCappedAtTheSourcesBitRate() async throws {
            try await Scenario.run("transcode-cap") { scenario in
                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1))
                _ = try scenario.launch("ffmpeg", [
                    "-nostdin", "-hide_banner", "-loglevel", "warning", "-re",
                    "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
                    "-c:v", "libx264", "-preset", "veryfast", "-b:v", "300k", "-maxrate", "300k", "-bufsize", "300k", "-g", "60",
                    "-c:a", "aac", "-b:a", "64k", "-t", "40", "-f", "flv", node.rtmpURL("abr", "cap"),
                ], name: "publisher")
                try await scenario.waitUntilLive(node, "abr", "cap/360p", timeout: .seconds(20))
                let source = try await scenario.openViewer(node, "abr", "cap")
                let rung = try await scenario.openViewer(node, "abr", "cap/360p")
                try await Task.sleep(for: .seconds(14))
                // Video bits per second over the viewers' last 6 s of media, past the measuring.
                func bitRate(_ viewer: HTTPFLVViewer) throws -> Int {
                    let frames = try viewer.flv().videoFrames
                    guard let last = frames.last?.timestamp else { return 0 }
                    let window = frames.filter { $0.timestamp + 6000 > last }
                    return window.reduce(0) { $0 + $1.data.count } * 8 / 6
                }
                let sourceRate = try bitRate(source)
                let rungRate = try bitRate(rung)
                scenario.note("video over 6 s: source \(sourceRate / 1000) kbit/s, 360p rung \(rungRate / 1000) kbit/s (ladder: 800)")
                scenario.check(sourceRate > 150_000 && sourceRate < 450_000, "the source's video is \(sourceRate / 1000) kbit/s, expected about 300")
                scenario.check(rungRate <= sourceRate * 5 / 4, "the 360p rung is \(rungRate / 1000) kbit/s, above the source's \(sourceRate / 1000)")
                scenario.check(node.log.contains("a rung above the source's bit rate is capped at it"), "no rung was capped")
            }
        }

        /// Presentation times (ms) of the keyframes of a file's video stream.
        static func keyframeTimes(of path: String, scenario: Scenario) async throws -> [Int] {
            let run = try await scenario.run(
                "ffprobe",
                ["-v", "error", "-select_streams", "v", "-show_entries", "stream=index,codec_type:packet=stream_index,dts,pts,flags", "-of", "json", path],
                name: "source-keyframes",
                timeout: .seconds(20)
            )
            try scenario.require(run.succeeded, "ffprobe of the source failed: \(run)")
            let report = try ProbeReport.decode(run.stdout)
            return (report.packets ?? []).filter(\.isKeyframe).compactMap(\.pts)
        }
    }
}
