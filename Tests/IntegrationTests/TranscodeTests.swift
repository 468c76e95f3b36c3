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
