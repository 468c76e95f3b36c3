import Foundation
import TestSupport
import Testing

extension IntegrationTests {
    /// Publishers built on librtmp, as the mobile SDKs derived from LFLiveKit are: the test
    /// publisher (Tests/Peers/librtmp-publisher.c) hands packets to RTMP_SendPacket with the
    /// header size the SDK would choose, and librtmp compresses the headers itself.
    @Suite("librtmp publishers")
    struct LibRTMPPublisherTests {
        struct Habit: Sendable, CustomTestStringConvertible {
            let name: String
            let arguments: [String]
            let reconnects: Bool
            var testDescription: String { self.name }

            static let all: [Habit] = [
                // The field report: MEDIUM headers everywhere, so every fresh channel
                // (@setDataFrame on 5, video on 6) opens with a type 1 header; 128-byte chunks;
                // a network drop mid-stream, after which the SDK sends the sequence headers again.
                Habit(name: "medium headers, 128-byte chunks, reconnect", arguments: ["--headers", "medium", "--reconnect-at-tag", "250"], reconnects: true),
                // LARGE on each channel's first packet and MEDIUM afterwards; Set Chunk Size right
                // after `connect`; timestamps past 2^24 ms, so librtmp sends extended timestamps
                // and repeats them on type 3 continuation chunks.
                Habit(name: "large first, set chunk size after connect, extended timestamps", arguments: ["--headers", "large-first", "--chunk-size", "4096", "--timestamp-base", "16777000"], reconnects: false),
                // LFLiveKit exactly: video LARGE, audio and metadata MEDIUM, timestamps crossing 2^24 ms.
                Habit(name: "LFLiveKit headers, extended timestamps on continuations, reconnect", arguments: ["--headers", "lfl", "--timestamp-base", "16776000", "--reconnect-at-tag", "250"], reconnects: true),
            ]
        }

        @Test("A librtmp publisher plays over RTMP, HTTP-FLV and HLS with every frame, in order", arguments: Habit.all)
        func librtmpPublisher(_ habit: Habit) async throws {
            try await Scenario.run("librtmp-publisher") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let publisherProgram = try await LibRTMPPublisher.shared.executable()
                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 4))
                let url = node.rtmpURL("live", "sdk")
                let publisher = try scenario.launch(executable: publisherProgram, habit.arguments + [url, media.url.path], name: "librtmp-publisher")
                scenario.note("librtmp publisher \(habit.arguments.joined(separator: " ")) publishing \(media.kind.rawValue)")
                try await scenario.waitUntilLive(node, "live", "sdk")

                let rtmpViewer = try scenario.startProbe(url, name: "probe-rtmp")
                let flvViewer = try await scenario.openViewer(node, "live", "sdk")

                let published = await publisher.waitForExit(timeout: .seconds(30))
                try scenario.require(published == .exited(0), "the librtmp publisher ended with \(published.map(\.description) ?? "no exit"): \(tail(publisher.stderrText, lines: 10))")
                let sessions = habit.reconnects ? 2 : 1
                scenario.check(
                    publisher.stdoutText.contains("in \(sessions) session(s)"),
                    "the publisher did not run \(sessions) session(s): \(publisher.stdoutText)"
                )

                // HLS, while the stream is still in its grace period: the listed MPEG-TS segments decode as H.264 + AAC.
                let playlist = try await scenario.mediaPlaylist(node, "/live/sdk/src/index.m3u8")
                let segments = playlist.complete.map { "/live/sdk/src/\($0.uri ?? "seg\($0.sequence).ts")" }
                try scenario.require(segments.count >= 2, "HLS lists \(segments.count) complete segments of a 12 s stream:\n\(playlist.text)")
                let hls = try await scenario.download(node, segments, to: "hls.ts")
                let (hlsDecode, hlsReport) = try await scenario.decodeCheck(hls, name: "decode-hls")
                scenario.check(hlsDecode.succeeded && hlsDecode.stderr.isEmpty, "HLS segments do not decode cleanly: \(hlsDecode)")
                scenario.check(hlsReport?.video?.codecName == "h264", "HLS video codec \(hlsReport?.video?.codecName ?? "none"), expected h264")
                scenario.check(hlsReport?.audio?.codecName == "aac", "HLS audio codec \(hlsReport?.audio?.codecName ?? "none"), expected aac")
                let hlsVideo = try await scenario.packetTimes(hls, stream: "video", name: "times-hls")
                let hlsRegressions = zip(hlsVideo, hlsVideo.dropFirst()).filter { $0.1.dts < $0.0.dts }
                scenario.check(hlsVideo.count >= 60, "HLS segments hold \(hlsVideo.count) video frames")
                scenario.check(hlsRegressions.isEmpty, "HLS video DTS goes backwards: \(hlsRegressions.prefix(3))")

                // RTMP (ffprobe) and HTTP-FLV viewers joined at the start: every frame, monotonic.
                if let report = try await scenario.finishProbe(rtmpViewer, timeout: .seconds(20)) {
                    scenario.checkAudioVideo(report, matches: media, "RTMP")
                }
                _ = await flvViewer.connection.waitForClose(timeout: .seconds(10))
                let flv = try flvViewer.flv()
                scenario.check(flv.error == nil, "HTTP-FLV viewer stream is not valid FLV: \(flv.error ?? "")")
                let video = flv.tags.filter { $0.isVideo && $0.isMediaFrame }
                let audio = flv.tags.filter { $0.isAudio && $0.isMediaFrame }
                scenario.checkWithinOnePercent(video.count, of: media.videoFrames, "HTTP-FLV video frames")
                scenario.checkWithinOnePercent(audio.count, of: media.audioFrames, "HTTP-FLV audio frames")
                scenario.check(flv.tags.contains(where: \.isAVCSequenceHeader) && flv.tags.contains(where: \.isAACSequenceHeader), "HTTP-FLV viewer got no AVC or AAC sequence header")
                scenario.check(video.first?.isKeyframe == true, "HTTP-FLV: the first video frame is not a keyframe")
                let regressions = flv.timestampRegressions()
                scenario.check(regressions.isEmpty, "HTTP-FLV timestamps go backwards: \(regressions.prefix(5).map { "type \($0.type): \($0.previous) -> \($0.next)" })")
                let flvFile = scenario.file("viewer.flv")
                try Data(try flvViewer.response().body).write(to: flvFile)
                let (flvDecode, flvReport) = try await scenario.decodeCheck(flvFile, name: "decode-flv")
                scenario.check(flvDecode.succeeded && flvDecode.stderr.isEmpty, "the HTTP-FLV viewer's stream does not decode cleanly: \(flvDecode)")
                scenario.check(flvReport?.video?.codecName == "h264" && flvReport?.audio?.codecName == "aac", "HTTP-FLV codecs \(flvReport?.video?.codecName ?? "none")/\(flvReport?.audio?.codecName ?? "none"), expected h264/aac")

                let refused = try await node.closedConnections(reason: "unknown_chunk_stream")
                scenario.check(refused == 0, "the node refused \(refused) connection(s) for an unknown chunk stream")
                scenario.note("RTMP and HTTP-FLV: \(video.count)/\(media.videoFrames) video, \(audio.count)/\(media.audioFrames) audio frames; HLS: \(segments.count) segments, \(hlsVideo.count) video frames")
            }
        }
    }
}
