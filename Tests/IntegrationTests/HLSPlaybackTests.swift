import Foundation
import TestSupport
import Testing

/// One node shared by the HLS playback tests: `live/demo`, a looping ffmpeg publisher of
/// 640x360 H.264 Main (2 s GOPs) + AAC, with a few segments already cut.
struct HLSEnvironment: SuiteTrait, TestScoping {
    final class Shared: Sendable {
        let scenario: Scenario
        let node: NodeProcess
        let media: MediaFile
        let publisher: ChildProcess

        init(scenario: Scenario, node: NodeProcess, media: MediaFile, publisher: ChildProcess) {
            self.scenario = scenario
            self.node = node
            self.media = media
            self.publisher = publisher
        }

        /// `/live/demo`
        var base: String { "/\(HLSEnvironment.app)/\(HLSEnvironment.stream)" }
        var url: String { self.node.httpBase + self.base }
    }

    static let app = "live"
    static let stream = "demo"

    @TaskLocal static var current: Shared?

    func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        try await Scenario.run("hls") { scenario in
            let media = try await MediaLibrary.shared.file(.gopAudioVideo)
            let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 2))
            let publisher = try scenario.publish(media, to: node.rtmpURL(Self.app, Self.stream), name: "publisher", loop: true)
            try await scenario.waitUntilLive(node, Self.app, Self.stream)
            // ffmpeg's HLS demuxer starts three segments from the live edge: have that many.
            try await scenario.waitForSegments(node, "/\(Self.app)/\(Self.stream)", count: 3)
            try await Self.$current.withValue(Shared(scenario: scenario, node: node, media: media, publisher: publisher)) {
                try await function()
            }
            scenario.check(publisher.isRunning, "the publisher ended during the HLS tests: \(publisher.termination.map(\.description) ?? ""): \(tail(publisher.stderrText, lines: 10))")
        }
    }

    static func shared() throws -> Shared {
        guard let current else { throw IntegrationFailure("the HLS tests need the .hlsEnvironment suite trait") }
        return current
    }
}

extension Trait where Self == HLSEnvironment {
    /// Runs the suite against one node with a live H.264+AAC stream.
    static var hlsEnvironment: Self { HLSEnvironment() }
}

/// Whether the browser test can run: Debian's chromium on PATH and Playwright for Python
/// (in the project virtualenv `.venv/`, made by scripts/install-deps.sh).
enum BrowserSupport {
    static let missing: String? = {
        guard (try? TestEnvironment.tool("chromium")) != nil else { return "chromium is not on PATH" }
        guard let python = try? TestEnvironment.python3() else { return "neither .venv/bin/python3 nor python3 on PATH" }
        // The package's files, not an import in a child process: a trait is evaluated
        // synchronously, before any test runs.
        let environment = python.deletingLastPathComponent().deletingLastPathComponent()
        let libraries = environment.appendingPathComponent("lib")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: libraries.path)) ?? []
        let installed = versions.contains { version in
            FileManager.default.fileExists(atPath: libraries.appendingPathComponent("\(version)/site-packages/playwright/sync_api/__init__.py").path)
        }
        return installed ? nil : "the playwright Python package is missing from \(environment.path) (make deps)"
    }()

    static var script: URL? {
        TestEnvironment.repositoryRoot?.appendingPathComponent("Tests/IntegrationTests/Browser/play_hls.py")
    }
}

extension IntegrationTests {
    @Suite("HLS playback", .hlsEnvironment)
    struct HLSPlaybackTests {
        @Test("ffprobe and ffmpeg play both master playlists; every segment and part decodes on its own")
        func bothVariantsPlay() async throws {
            let shared = try HLSEnvironment.shared()
            let (scenario, node, media) = (shared.scenario, shared.node, shared.media)

            // The masters, through ffprobe (streams) and ffmpeg (4 s of decoding).
            async let probeClassic = scenario.probeStreams("\(shared.url)/index.m3u8", name: "probe-master-classic")
            async let probeLowLatency = scenario.probeStreams("\(shared.url)/llhls.m3u8", name: "probe-master-llhls")
            for (label, (run, report)) in [("classic", try await probeClassic), ("LL-HLS", try await probeLowLatency)] {
                guard scenario.check(run.succeeded, "ffprobe of the \(label) master failed: \(run)"), let report else { continue }
                scenario.checkVideo(report, width: media.width, height: media.height, "\(label) master")
                scenario.checkAudio(report, "\(label) master")
            }
            for (label, file) in [("classic", "index.m3u8"), ("LL-HLS", "llhls.m3u8")] {
                let run = try await scenario.decodeWithFFmpeg("\(shared.url)/\(file)", seconds: 4, name: "ffmpeg-master-\(file)")
                scenario.check(run.succeeded, "ffmpeg -i \(label) master -t 4 -f null - failed: \(run)")
                if !run.stderr.isEmpty { scenario.note("ffmpeg on the \(label) master said: \(tail(run.stderr, lines: 5))") }
            }

            // Every classic segment on its own, all at once (bounded).
            let classic = try await scenario.mediaPlaylist(node, "\(shared.base)/src/index.m3u8")
            try scenario.require(classic.complete.count >= 3, "the classic playlist lists \(classic.complete.count) segments:\n\(classic.text)")
            var transportStreams: [Int: URL] = [:]
            for segment in classic.complete {
                transportStreams[segment.sequence] = try await scenario.download(node, ["\(shared.base)/src/seg\(segment.sequence).ts"], to: "seg\(segment.sequence).ts")
            }
            // LL-HLS: init + each segment, and init + the parts of every segment whose parts are listed.
            let lowLatency = try await scenario.mediaPlaylist(node, "\(shared.base)/src/llhls.m3u8")
            try scenario.require(lowLatency.complete.count >= 3, "the LL-HLS playlist lists \(lowLatency.complete.count) complete segments:\n\(lowLatency.text)")
            var fragmented: [Int: URL] = [:]
            var partFiles: [Int: URL] = [:]
            for segment in lowLatency.complete {
                let map = try #require(segment.map)
                fragmented[segment.sequence] = try await scenario.download(node, ["\(shared.base)/src/\(map)", "\(shared.base)/src/seg\(segment.sequence).m4s"], to: "seg\(segment.sequence).mp4")
                if !segment.parts.isEmpty {
                    partFiles[segment.sequence] = try await scenario.download(node, ["\(shared.base)/src/\(map)"] + segment.parts.map { "\(shared.base)/src/\($0.uri)" }, to: "parts\(segment.sequence).mp4")
                }
            }
            try scenario.require(!partFiles.isEmpty, "no complete LL-HLS segment lists its parts:\n\(lowLatency.text)")
            for (sequence, parts) in partFiles {
                // A segment is its parts, byte for byte.
                scenario.check(
                    (try? Data(contentsOf: parts)) == (try? Data(contentsOf: fragmented[sequence]!)),
                    "init + the parts of segment \(sequence) differ from init + seg\(sequence).m4s (\(fileSize(parts)) vs \(fileSize(fragmented[sequence]!)) bytes)"
                )
            }

            let files = transportStreams.map { ("ts-\($0.key)", $0.value) } + fragmented.map { ("m4s-\($0.key)", $0.value) } + partFiles.map { ("parts-\($0.key)", $0.value) }
            let decodes = try await withThrowingTaskGroup(of: (String, ToolRun, ProbeReport?).self) { group in
                for (label, file) in files {
                    group.addTask {
                        let run = try await scenario.decodeWithFFmpeg(file.path, name: "decode-\(label)")
                        let (_, report) = try await scenario.probeStreams(file.path, name: "probe-\(label)")
                        return (label, run, report)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for (label, run, report) in decodes.sorted(by: { $0.0 < $1.0 }) {
                scenario.check(run.succeeded, "\(label) does not decode on its own: \(run)")
                if label.hasPrefix("ts-") {
                    scenario.check(run.stderr.isEmpty, "decoding \(label) reported errors:\n\(tail(run.stderr, lines: 10))")
                }
                guard scenario.check(report != nil, "ffprobe cannot read \(label)"), let report else { continue }
                scenario.checkVideo(report, width: media.width, height: media.height, label)
                scenario.checkAudio(report, label)
            }
            scenario.note("decoded \(transportStreams.count) TS segments, \(fragmented.count) fMP4 segments and the parts of \(partFiles.count) segments")

            // Both variants of one segment carry the same media: the same audio/video offset, and
            // frames presented at the same times, in order.
            if let sequence = Set(transportStreams.keys).intersection(fragmented.keys).max() {
                try await scenario.compareVariants(ts: transportStreams[sequence]!, fmp4: fragmented[sequence]!, label: "segment \(sequence)")
            }
        }

        @Test("The playlist checker passes over successive polls of both media playlists, and the masters describe the stream")
        func playlistsFollowTheRules() async throws {
            let shared = try HLSEnvironment.shared()
            let (scenario, node, media) = (shared.scenario, shared.node, shared.media)

            let recorder = PlaylistRecorder()
            let polling = recorder.start(scenario, node, base: shared.base, interval: .milliseconds(200))
            try await Task.sleep(for: .seconds(6))
            polling.cancel()
            await polling.value
            scenario.check(recorder.errors.isEmpty, "polling failed: \(recorder.errors.prefix(5))")
            let classic = scenario.checkPolls(recorder.playlists(.transportStream), variant: .transportStream)
            let lowLatency = scenario.checkPolls(recorder.playlists(.lowLatency), variant: .lowLatency)
            let windows = recorder.playlists(.transportStream).compactMap { $0.complete.last?.sequence }
            scenario.check((windows.last ?? 0) - (windows.first ?? 0) >= 2, "the classic playlist's newest segment moved from \(windows.first ?? -1) to \(windows.last ?? -1) in 6 s (2 s segments)")
            // Both variants share media sequence numbers.
            scenario.check(abs((classic.last ?? -10) - (lowLatency.last ?? 0)) <= 1, "classic and LL-HLS disagree on the newest segment: \(classic.last ?? -1) vs \(lowLatency.last ?? -1)")
            let hints = recorder.playlists(.lowLatency).compactMap { $0.preloadHint?["URI"] }
            scenario.note("polled \(recorder.playlists(.transportStream).count) classic and \(recorder.playlists(.lowLatency).count) LL-HLS playlists; segments \(classic.first ?? -1)…\(classic.last ?? -1); \(Set(hints).count) distinct preload hints")

            // The master playlists, against the clip's own sequence headers and ffprobe's view of it.
            let codecs = try media.codecStrings()
            let (sourceRun, source) = try await scenario.probeStreams(media.url.path, name: "probe-source")
            try scenario.require(sourceRun.succeeded, "ffprobe of the source failed: \(sourceRun)")
            let profiles = ["Baseline": 66, "Constrained Baseline": 66, "Main": 77, "High": 100]
            let profile = try #require(profiles[source?.video?.profile ?? ""], "source profile \(source?.video?.profile ?? "none")")
            let level = try #require(source?.video?.level)
            scenario.check(
                codecs.count == 2 && codecs[0].hasPrefix("avc1." + String(format: "%02x", profile)) && codecs[0].hasSuffix(String(format: "%02x", level)) && codecs[1] == "mp4a.40.2",
                "the source's codec strings \(codecs) do not match ffprobe's profile \(profile) level \(level) and AAC-LC"
            )
            let expected = HLSPlaylistChecker.ExpectedVariant(codecs: codecs.joined(separator: ","), width: media.width, height: media.height, frameRate: 30)
            let lastSegment = try #require(recorder.playlists(.transportStream).last?.complete.last)
            let segment = try await scenario.hlsGet(node, "\(shared.base)/src/seg\(lastSegment.sequence).ts")
            let segmentBitrate = Double(segment.body.count * 8) / (lastSegment.duration ?? 2)
            for file in ["index.m3u8", "llhls.m3u8"] {
                let response = try await scenario.hlsGet(node, "\(shared.base)/\(file)")
                guard scenario.check(response.status == 200, "GET \(shared.base)/\(file) answered \(response.status)") else { continue }
                let master = try MasterPlaylist.parse(response.bodyText)
                let problems = HLSPlaylistChecker.checkMaster(master, mediaPlaylist: file, expected: expected)
                scenario.check(problems.isEmpty, "master \(file):\n- \(problems.joined(separator: "\n- "))\n\(master.text)")
                if let average = master.variants.first?.attributes.double("AVERAGE-BANDWIDTH") {
                    scenario.check(
                        (0.5...2).contains(average / segmentBitrate),
                        "master \(file): AVERAGE-BANDWIDTH \(Int(average)) is far from seg\(lastSegment.sequence).ts's \(Int(segmentBitrate)) bit/s"
                    )
                }
            }
        }

        @Test("Blocking playlist reload holds until the part exists; out-of-range or malformed _HLS_ values get a 400")
        func blockingReload() async throws {
            let shared = try HLSEnvironment.shared()
            let (scenario, node) = (shared.scenario, shared.node)
            let path = "\(shared.base)/src/llhls.m3u8"

            func hint(of playlist: MediaPlaylist) throws -> (sequence: Int, part: Int) {
                let uri = try #require(playlist.preloadHint?["URI"], "no preload hint:\n\(playlist.text)")
                let numbers = uri.dropFirst("part".count).dropLast(".m4s".count).split(separator: ".").compactMap { Int($0) }
                try scenario.require(numbers.count == 2, "unexpected hint URI \(uri)")
                return (numbers[0], numbers[1])
            }

            for round in 1...3 {
                // The part after the current hint does not exist yet: the server must hold the request
                // until it does (about two parts, ≤ 2 × 0.334 s), and the answer must list it.
                let current = try await scenario.mediaPlaylist(node, path)
                let next = try hint(of: current)
                let wanted = (sequence: next.sequence, part: next.part + 1)
                let start = ContinuousClock.now
                let response = try await scenario.hlsGet(node, "\(path)?_HLS_msn=\(wanted.sequence)&_HLS_part=\(wanted.part)", timeout: .seconds(8))
                let elapsed = ContinuousClock.now - start
                try scenario.require(response.status == 200, "blocking reload for part \(wanted) answered \(response.status)")
                let blocked = try MediaPlaylist.parse(response.bodyText)
                let segment = blocked.segments.first { $0.sequence == wanted.sequence }
                let satisfied = (segment?.parts.count ?? 0) > wanted.part || segment?.duration != nil
                scenario.check(satisfied, "round \(round): the answer to _HLS_msn=\(wanted.sequence)&_HLS_part=\(wanted.part) does not contain that part:\n\(blocked.text)")
                scenario.check(
                    blocked.segments.first(where: { $0.sequence == next.sequence })?.parts.indices.contains(next.part) == true,
                    "round \(round): the answer does not list the previously hinted part\(next.sequence).\(next.part).m4s:\n\(blocked.text)"
                )
                // At a segment boundary "the part after the hint" is satisfied when the segment
                // completes, which may be soon; inside a segment the request must have blocked.
                if segment?.duration == nil {
                    scenario.check(elapsed >= .milliseconds(150), "round \(round): the reload for a part two ahead returned after \(elapsed): it did not block")
                }
                scenario.check(elapsed <= .milliseconds(1200), "round \(round): the reload for a part two ahead took \(elapsed) (parts are 0.334 s)")
                scenario.note("round \(round): _HLS_msn=\(wanted.sequence)&_HLS_part=\(wanted.part) answered after \(elapsed)")
            }

            // The hinted part itself: held until it exists, then the fMP4 fragment.
            let current = try await scenario.mediaPlaylist(node, path)
            let next = try hint(of: current)
            let start = ContinuousClock.now
            let part = try await scenario.hlsGet(node, "\(shared.base)/src/part\(next.sequence).\(next.part).m4s", timeout: .seconds(8))
            let elapsed = ContinuousClock.now - start
            scenario.check(part.status == 200, "GET of the preload-hinted part\(next.sequence).\(next.part).m4s answered \(part.status)")
            let box = part.body.count >= 8 ? String(decoding: part.body[4..<8], as: UTF8.self) : ""
            scenario.check(box == "moof" || box == "styp", "the hinted part starts with box \"\(box)\", expected moof or styp")
            scenario.check(part.header("Content-Type") == "video/mp4", "the hinted part has Content-Type \(part.header("Content-Type") ?? "none")")
            scenario.check(elapsed <= .milliseconds(1000), "the hinted part took \(elapsed) to arrive (parts are 0.334 s)")
            scenario.note("hinted part\(next.sequence).\(next.part).m4s: \(part.body.count) bytes after \(elapsed)")

            // Requests a server must refuse at once.
            let last = try #require(current.lastPart)
            let refused = [
                "?_HLS_msn=\(last.sequence + 10)",
                "?_HLS_msn=\(last.sequence + 10)&_HLS_part=0",
                "?_HLS_part=1",
                "?_HLS_msn=abc",
                "?_HLS_msn=\(last.sequence)&_HLS_part=x1",
                "?_HLS_msn=-1",
                "?_HLS_msn=12345678901234567890",
                "?_HLS_msn=\(last.sequence)&_HLS_part=12345678901234567890",
                "?_HLS_msn=\(String(repeating: "9", count: 4000))",
            ]
            for query in refused {
                let start = ContinuousClock.now
                let response = try await scenario.hlsGet(node, path + query, timeout: .seconds(3))
                let elapsed = ContinuousClock.now - start
                scenario.check(response.status == 400, "GET llhls.m3u8\(query.prefix(80)) answered \(response.status), expected 400")
                scenario.check(elapsed < .milliseconds(500), "GET llhls.m3u8\(query.prefix(80)) took \(elapsed) to be refused")
            }
        }

        @Test("Bad requests get a 4xx at once and never a file; content types, caching and CORS are right")
        func badRequestsAndHeaders() async throws {
            let shared = try HLSEnvironment.shared()
            let (scenario, node) = (shared.scenario, shared.node)
            let base = shared.base
            let hostile = [
                "\(base)/../../etc/passwd",
                "\(base)/src/../../../../etc/passwd",
                "\(base)/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
                "\(base)/src/%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd",
                "\(base)/src/..%2finit0.mp4",
                "\(base)/src/..%2f..%2findex.m3u8",
                "\(base)/..%2fdemo/index.m3u8",
                "/live/nope/index.m3u8",
                "/live/nope/llhls.m3u8",
                "/live/nope/src/index.m3u8",
                "/live/nope/src/seg0.ts",
                "\(base)/720p/index.m3u8",
                "\(base)/720p/llhls.m3u8",
                "\(base)/720p/seg0.ts",
                "\(base)/src/seg-1.ts",
                "\(base)/src/segX.ts",
                "\(base)/src/seg.ts",
                "\(base)/src/seg1.ts.bak",
                "\(base)/src/seg 1.ts",
                "\(base)/src/seg\(String(repeating: "1", count: 30)).ts",
                "\(base)/src/part1.m4s",
                "\(base)/src/part1..m4s",
                "\(base)/src/part1.0.0.m4s",
                "\(base)/src/init-1.mp4",
                "\(base)/src/init99.mp4",
                "\(base)/src/seg999999.ts",
                "\(base)/src/other.m3u8",
                "\(base)/master.m3u8",
                "\(base)/src/index.m3u8/extra",
            ]
            for path in hostile {
                let start = ContinuousClock.now
                let response = try await scenario.hlsGet(node, path, timeout: .seconds(3))
                let elapsed = ContinuousClock.now - start
                scenario.check((400..<500).contains(response.status), "GET \(path) answered \(response.status), expected 4xx")
                scenario.check(elapsed < .milliseconds(500), "GET \(path) took \(elapsed)")
                scenario.check(!response.bodyText.contains("root:"), "GET \(path) returned a file from disk:\n\(response.bodyText.prefix(200))")
                // Paths of HLS shape (app/name/file or app/name/rendition/file) reach the HLS routes,
                // which answer with CORS to any client; every answer, the router's own 404s for
                // deeper paths included, carries it for a browser (which sends Origin).
                let routed = path.split(separator: "/").count <= 4 && !path.contains(" ")
                if routed {
                    scenario.check(response.header("Access-Control-Allow-Origin") == "*", "GET \(path) (\(response.status)) lacks Access-Control-Allow-Origin: *")
                }
                // (A space breaks the request line itself: the HTTP parser answers 400 before any route.)
                if !path.contains(" ") {
                    let fromBrowser = try await HTTPClient.get(port: node.httpPort, path: path, headers: ["Origin": "https://player.example"], timeout: .seconds(3))
                    scenario.check((400..<500).contains(fromBrowser.status) && fromBrowser.header("Access-Control-Allow-Origin") == "*",
                                   "GET \(path) with an Origin answered \(fromBrowser.status) without Access-Control-Allow-Origin: * (headers: \(fromBrowser.headers))")
                }
            }
            // A browser's preflight (hls.js asking to send Range) is answered.
            do {
                let preflight = try await HTTPClient.request(
                    "OPTIONS", port: node.httpPort, path: "\(base)/src/index.m3u8",
                    headers: ["Origin": "https://player.example", "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "range"]
                )
                scenario.check((200..<300).contains(preflight.status) && preflight.header("Access-Control-Allow-Origin") == "*"
                               && (preflight.header("Access-Control-Allow-Headers") ?? "").lowercased().contains("range"),
                               "the preflight answered \(preflight.status) \(preflight.headers)")
            }

            // What a player gets for each kind of resource.
            let lowLatency = try await scenario.mediaPlaylist(node, "\(base)/src/llhls.m3u8")
            let segment = try #require(lowLatency.complete.last)
            let part = try #require(lowLatency.segments.last(where: { !$0.parts.isEmpty }))
            let resources: [(path: String, type: String, playlist: Bool)] = [
                ("\(base)/index.m3u8", "application/vnd.apple.mpegurl", true),
                ("\(base)/llhls.m3u8", "application/vnd.apple.mpegurl", true),
                ("\(base)/src/index.m3u8", "application/vnd.apple.mpegurl", true),
                ("\(base)/src/llhls.m3u8", "application/vnd.apple.mpegurl", true),
                ("\(base)/src/seg\(segment.sequence).ts", "video/mp2t", false),
                ("\(base)/src/\(segment.map ?? "init0.mp4")", "video/mp4", false),
                ("\(base)/src/seg\(segment.sequence).m4s", "video/mp4", false),
                ("\(base)/src/\(part.parts[0].uri)", "video/mp4", false),
            ]
            for resource in resources {
                let response = try await scenario.hlsGet(node, resource.path)
                guard scenario.check(response.status == 200, "GET \(resource.path) answered \(response.status)") else { continue }
                scenario.check(response.header("Content-Type") == resource.type, "GET \(resource.path): Content-Type \(response.header("Content-Type") ?? "none"), expected \(resource.type)")
                scenario.check(response.header("Access-Control-Allow-Origin") == "*", "GET \(resource.path) lacks Access-Control-Allow-Origin: *")
                let cache = response.header("Cache-Control")?.lowercased() ?? ""
                let maxAge = cache.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.first { $0.hasPrefix("max-age=") }.flatMap { Int($0.dropFirst("max-age=".count)) }
                if resource.playlist {
                    scenario.check(
                        cache.contains("no-cache") || cache.contains("no-store") || (maxAge ?? 100) <= 1,
                        "GET \(resource.path): Cache-Control \"\(cache)\" lets a playlist be cached for long"
                    )
                } else {
                    scenario.check((maxAge ?? 0) >= 60, "GET \(resource.path): Cache-Control \"\(cache)\" does not cache an immutable segment (max-age ≥ 60)")
                }
            }
        }

        @Test("Headless Chromium plays both master playlists natively in a <video> element", .enabled(if: BrowserSupport.missing == nil, "needs chromium and Playwright for Python"))
        func browserPlays() async throws {
            let shared = try HLSEnvironment.shared()
            let scenario = shared.scenario
            let script = try #require(BrowserSupport.script)
            for file in ["llhls.m3u8", "index.m3u8"] {
                let screenshot = scenario.file("browser-\(file).png")
                let run = try await ChildProcess.run(
                    TestEnvironment.python3(),
                    [script.path, "\(shared.url)/\(file)", screenshot.path, "--advance", "3", "--within", "6"],
                    name: "browser-\(file)",
                    directory: scenario.directory,
                    timeout: .seconds(45)
                )
                scenario.check(run.succeeded, "Chromium did not play \(file): \(run)\nstdout: \(run.stdout)")
                scenario.check(fileSize(screenshot) > 5000, "the screenshot of \(file) is \(fileSize(screenshot)) bytes: blank?")
                scenario.note("browser \(file): \(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines))")
                if file == "llhls.m3u8", fileSize(screenshot) > 0 {
                    let copy = URL(fileURLWithPath: "/tmp/estuary-hls-screenshot.png")
                    try? FileManager.default.removeItem(at: copy)
                    try? FileManager.default.copyItem(at: screenshot, to: copy)
                }
            }
        }
    }
}

extension Scenario {
    /// The classic and LL-HLS versions of one segment against each other: the same audio/video
    /// offset (A/V sync), and in the fMP4 one, video frames presented one frame apart.
    ///
    /// The fMP4 variant was once one reorder delay late in FFmpeg (CMAF's negative composition
    /// offsets, which its demuxer reads as a whole-track shift); positive offsets fixed it.
    func compareVariants(ts: URL, fmp4: URL, label: String) async throws {
        let tsVideo = try await self.packetTimes(ts, stream: "video", name: "times-ts-video")
        let tsAudio = try await self.packetTimes(ts, stream: "audio", name: "times-ts-audio")
        let mp4Video = try await self.packetTimes(fmp4, stream: "video", name: "times-mp4-video")
        let mp4Audio = try await self.packetTimes(fmp4, stream: "audio", name: "times-mp4-audio")
        try self.require(!tsVideo.isEmpty && !tsAudio.isEmpty && !mp4Video.isEmpty && !mp4Audio.isEmpty, "\(label): a variant has no audio or video packets")
        self.check(tsVideo.count == mp4Video.count, "\(label): \(tsVideo.count) video frames in TS, \(mp4Video.count) in fMP4")

        func smallestGap(_ times: [(pts: Double, dts: Double)]) -> Double {
            let sorted = times.map(\.pts).sorted()
            return zip(sorted, sorted.dropFirst()).map { $1 - $0 }.min() ?? 0
        }
        // 30 fps: presented frames are ~33 ms apart; 20 ms leaves room for millisecond rounding.
        self.check(smallestGap(tsVideo) >= 0.020, "\(label) TS: two video frames presented \(smallestGap(tsVideo)) s apart")
        let tsOffset = tsVideo.map(\.pts).min()! - tsAudio.map(\.pts).min()!
        let mp4Offset = mp4Video.map(\.pts).min()! - mp4Audio.map(\.pts).min()!
        let mp4Gap = smallestGap(mp4Video)
        self.note("\(label): first video − first audio PTS: TS \(tsOffset) s, fMP4 \(mp4Offset) s; smallest fMP4 video PTS step \(mp4Gap) s")
        self.check(abs(tsOffset - mp4Offset) <= 0.015, "\(label): A/V offset differs between variants: TS \(tsOffset) s, fMP4 \(mp4Offset) s")
        // The same presentation times, frame by frame, in both variants.
        let tsTimes = tsVideo.map(\.pts).sorted()
        let mp4Times = mp4Video.map(\.pts).sorted()
        let largestDifference = zip(tsTimes, mp4Times).map { abs($0 - $1) }.max() ?? 0
        self.check(largestDifference <= 0.002, "\(label): video presented up to \(largestDifference) s apart in TS and fMP4")
        // Part boundaries once gave a frame a lost pts (guessed durations); exact durations fixed it.
        self.check(mp4Gap >= 0.020, "\(label) fMP4: two video frames presented \(mp4Gap) s apart (TS: \(smallestGap(tsVideo)) s)")
    }
}
