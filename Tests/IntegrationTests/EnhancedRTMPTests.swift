import Foundation
import TestSupport
import Testing

extension IntegrationTests {
    /// Issue 26, Enhanced RTMP: streams in codecs legacy FLV cannot carry, from a publisher no
    /// one here wrote (PyAV's bundled FFmpeg, 7 or newer, in the project's virtualenv), to
    /// every kind of viewer.
    @Suite("Enhanced RTMP")
    struct EnhancedRTMPTests {
        /// What `Tests/Peers/pyav_watch.py` saw.
        struct Watch: Decodable {
            var video: String?
            var audio: String?
            var width: Int
            var height: Int
            var decoded: Int
            var keyframes: Int
            var firstIsKeyframe: Bool?
            var audioPackets: Int
            var dtsRegressions: Int
            var decodeErrors: Int
            var longestWait: Double
        }

        static func peer(_ name: String) throws -> String {
            guard let root = TestEnvironment.repositoryRoot else { throw IntegrationFailure("the repository is not found") }
            return root.appendingPathComponent("Tests/Peers/\(name)").path
        }

        @Test("HEVC published over Enhanced RTMP by PyAV's FFmpeg reaches every viewer: RTMP play (E-RTMP, PyAV) and HTTP-FLV (PyAV) watched 30 s, every frame decoded, with audio; LL-HLS (fMP4) with CODECS hvc1 and TS HLS, read by ffprobe")
        func hevcReachesEveryViewer() async throws {
            try await Scenario.run("ertmp-hevc") { scenario in
                let media = try await MediaLibrary.shared.file(.hevcAudioVideo)
                let node = try await scenario.startNode(label: "node")
                let python = try TestEnvironment.python3()
                _ = try scenario.launch(executable: python, [try Self.peer("pyav_publish.py"), media.url.path, node.rtmpURL("live", "hevc")], name: "pyav-publisher")
                try await scenario.waitUntilLive(node, "live", "hevc", timeout: .seconds(20))

                // The viewers that stay: HTTP-FLV and RTMP, each read and decoded by PyAV.
                let watcher = try Self.peer("pyav_watch.py")
                let flv = try scenario.launch(executable: python, [watcher, node.flvURL("live", "hevc"), "30"], name: "pyav-flv-viewer")
                let rtmp = try scenario.launch(executable: python, [watcher, node.rtmpURL("live", "hevc"), "30"], name: "pyav-rtmp-viewer")

                // Meanwhile HLS: the master names the codec; ffprobe reads both variants.
                let listed = await eventually(timeout: .seconds(15), interval: .milliseconds(250)) {
                    guard let master = try? await scenario.hlsGet(node, "/live/hevc/llhls.m3u8"), master.status == 200 else { return false }
                    return master.bodyText.contains("CODECS=\"hvc1.")
                }
                scenario.check(listed, "the LL-HLS master of the HEVC stream does not name hvc1")
                for (variant, file) in [("LL-HLS (fMP4)", "llhls.m3u8"), ("HLS (TS)", "index.m3u8")] {
                    if let report = try await scenario.probeLive("\(node.httpBase)/live/hevc/\(file)", name: "probe-\(file)", seconds: 4) {
                        let video = report.packets(of: report.video)
                        scenario.check(report.video?.codecName == "hevc" && report.video?.width == 640 && report.audio?.codecName == "aac",
                                       "\(variant) of the HEVC stream: \(String(describing: report.video)) \(String(describing: report.audio))")
                        scenario.check(video.count >= 60 && video.first?.isKeyframe == true && report.dtsRegressions(of: report.video).isEmpty,
                                       "\(variant): \(video.count) video packets, keyframe first: \(video.first?.isKeyframe ?? false)")
                    }
                }

                for (label, viewer) in [("HTTP-FLV", flv), ("RTMP", rtmp)] {
                    let run = await viewer.finish(timeout: .seconds(60))
                    guard scenario.check(run.succeeded, "the PyAV \(label) viewer: \(run)") else { continue }
                    let watch = try JSONDecoder().decode(Watch.self, from: Data(run.stdout.utf8))
                    scenario.note("PyAV over \(label): \(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines))")
                    scenario.check(watch.video == "hevc" && watch.width == 640 && watch.height == 360, "\(label): video \(watch.video ?? "none") \(watch.width)x\(watch.height)")
                    scenario.check(watch.audio == "aac" && watch.audioPackets >= 1200, "\(label): audio \(watch.audio ?? "none"), \(watch.audioPackets) packets in 30 s")
                    scenario.check(watch.decoded >= 850 && watch.decodeErrors == 0, "\(label): \(watch.decoded) frames decoded in 30 s (expected 850+), \(watch.decodeErrors) errors")
                    scenario.check(watch.firstIsKeyframe == true && watch.dtsRegressions == 0, "\(label): keyframe first \(watch.firstIsKeyframe ?? false), \(watch.dtsRegressions) DTS regressions")
                    scenario.check(watch.longestWait < 0.5, "\(label): waited \(watch.longestWait) s for a video frame")
                }
            }
        }
    }
}
