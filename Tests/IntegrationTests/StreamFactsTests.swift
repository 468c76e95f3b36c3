import Foundation
import TestSupport
import Testing

extension IntegrationTests {
    /// What an operator reads in `GET /api/v1/streams` about a stream's rates.
    @Suite("Stream facts")
    struct StreamFactsTests {
        static let token = "facts-admin-token"
        static let frameRate = 25.0
        static let videoBitRate = 500_000
        static let audioBitRate = 64_000

        /// `GET /api/v1/streams` on the coordinator: the live stream `app/name`, if listed.
        static func liveStream(_ coordinator: NodeProcess, _ app: String, _ name: String) async throws -> [String: Any]? {
            let (_, json) = try await coordinator.admin("/api/v1/streams", token: token)
            let streams = json["streams"] as? [[String: Any]] ?? []
            return streams.first { $0["app"] as? String == app && $0["name"] as? String == name && $0["state"] as? String == "live" }
        }

        /// A number of a JSON object (integers and reals alike).
        static func number(_ object: [String: Any]?, _ key: String) -> Double? {
            (object?[key] as? NSNumber)?.doubleValue
        }

        /// Bits per second of each track of an FLV file, from ffprobe's packet sizes (codec
        /// payloads, without FLV tag headers) over its duration at `frameRate`.
        static func fileBitRates(_ file: URL, scenario: Scenario) async throws -> (video: Double, audio: Double, videoFrames: Int) {
            let probe = try await scenario.run("ffprobe", ["-v", "error", "-show_entries", "packet=codec_type,size", "-of", "csv=p=0", file.path], name: "probe-packets", timeout: .seconds(30))
            try scenario.require(probe.succeeded, "ffprobe failed: \(probe)")
            var bytes: [String: Int] = [:]
            var frames = 0
            for line in probe.stdout.split(separator: "\n") {
                let fields = line.split(separator: ",")
                guard fields.count >= 2, let size = Int(fields[1]) else { continue }
                bytes[String(fields[0]), default: 0] += size
                if fields[0] == "video" { frames += 1 }
            }
            let seconds = Double(frames) / frameRate
            try scenario.require(seconds > 0, "the clip has no video frames")
            return (Double(bytes["video"] ?? 0) * 8 / seconds, Double(bytes["audio"] ?? 0) * 8 / seconds, frames)
        }

        @Test("An ingest's stream is listed by the coordinator with its measured frame rate and video and audio bit rates")
        func measuredRates() async throws {
            try await Scenario.run("stream-facts") { scenario in
                // 10 s of 640x360 at 25 fps, x264 held to 500 kbit/s (moving grain, so rate
                // control reaches its target as with a camera), AAC at 64 kbit/s.
                let clip = scenario.file("facts.flv")
                let make = try await scenario.run("ffmpeg", [
                    "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
                    "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25,noise=alls=12:allf=t",
                    "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
                    "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-g", "50", "-keyint_min", "50", "-sc_threshold", "0",
                    "-b:v", "500k", "-maxrate", "500k", "-bufsize", "1000k",
                    "-c:a", "aac", "-b:a", "64k", "-ac", "2",
                    "-t", "10", "-f", "flv", clip.path,
                ], name: "make-clip", timeout: .seconds(90))
                try scenario.require(make.succeeded, "generating the clip failed: \(make)")
                let file = try await Self.fileBitRates(clip, scenario: scenario)
                scenario.note("the clip: \(file.videoFrames) video frames, video \(Int(file.video)) bit/s, audio \(Int(file.audio)) bit/s (ffprobe)")

                let nats = try await NATSServerProcess.start(scenario)
                let bus = ["--nats", nats.url]
                let coordinator = try await scenario.startNode(NodeConfig(), label: "coordinator", arguments: ["--role", "coordinator", "--node-id", "coordinator", "--admin-token", Self.token] + bus)
                let ingest = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1), label: "ingest", arguments: ["--role", "ingest", "--node-id", "ingest-1"] + bus)

                let publisher = try scenario.launch("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "warning", "-stream_loop", "-1", "-re", "-i", clip.path, "-c", "copy", "-f", "flv", ingest.rtmpURL("live", "facts")], name: "publisher")
                let published = ContinuousClock.now
                scenario.note("publisher pid \(publisher.pid)")

                // Listed from the first heartbeat that carries the stream; the codec facts follow
                // once the configuration records arrived, and the rates only after the first
                // seconds of measurement: not the SPS's claim of 25 fps in the meantime.
                var first: [String: Any]?
                let described = await eventually(timeout: .seconds(10), interval: .milliseconds(100)) {
                    first = (try? await Self.liveStream(coordinator, "live", "facts"))?["facts"] as? [String: Any]
                    return first?["videoCodec"] != nil
                }
                try scenario.require(described, "the coordinator never described live/facts: \(first ?? [:])")
                scenario.note("described after \(ContinuousClock.now - published): \(first ?? [:])")
                scenario.check(first?["videoCodec"] as? String == "h264" && Self.number(first, "width") == 640 && first?["audioCodec"] as? String == "aac",
                               "the first description is not the clip's: \(first ?? [:])")
                scenario.check(first?["frameRate"] == nil && first?["videoBitRate"] == nil && first?["audioBitRate"] == nil,
                               "rates listed before they could be measured: \(first ?? [:])")

                var measured: [String: Any]?
                let appeared = await eventually(timeout: .seconds(10), interval: .milliseconds(150)) {
                    measured = (try? await Self.liveStream(coordinator, "live", "facts"))?["facts"] as? [String: Any]
                    return Self.number(measured, "frameRate") != nil
                }
                try scenario.require(appeared, "no measured frame rate within 10 s: \(measured ?? [:])")
                scenario.note("rates first listed after \(ContinuousClock.now - published): \(measured ?? [:])")

                // Once the 5 s window is full, every reading is what ffmpeg sends.
                try await Task.sleep(until: published + .seconds(7))
                for reading in 1...4 {
                    let facts = (try await Self.liveStream(coordinator, "live", "facts"))?["facts"] as? [String: Any]
                    let frameRate = Self.number(facts, "frameRate") ?? 0
                    let video = Self.number(facts, "videoBitRate") ?? 0
                    let audio = Self.number(facts, "audioBitRate") ?? 0
                    scenario.note("reading \(reading) at \(ContinuousClock.now - published): frameRate \(frameRate), videoBitRate \(Int(video)), audioBitRate \(Int(audio))")
                    scenario.check(abs(frameRate - Self.frameRate) <= 0.1 * Self.frameRate, "reading \(reading): frameRate \(frameRate), expected 25 ± 10%")
                    // Within 20% (video: 5 s of a rate-controlled encoder) and 10% (audio) of
                    // what ffprobe counts in the clip, and plausible for the encoder settings.
                    scenario.check(abs(video - file.video) <= 0.2 * file.video && video >= 0.5 * Double(Self.videoBitRate) && video <= 1.5 * Double(Self.videoBitRate),
                                   "reading \(reading): videoBitRate \(Int(video)), the clip carries \(Int(file.video)) (500k requested)")
                    scenario.check(abs(audio - file.audio) <= 0.1 * file.audio && audio >= 0.75 * Double(Self.audioBitRate) && audio <= 1.25 * Double(Self.audioBitRate),
                                   "reading \(reading): audioBitRate \(Int(audio)), the clip carries \(Int(file.audio)) (64k requested)")
                    if reading < 4 { try await Task.sleep(for: .seconds(1)) }
                }
                scenario.check(publisher.isRunning, "the publisher stopped: \(publisher.stderrText)")
            }
        }
    }
}
