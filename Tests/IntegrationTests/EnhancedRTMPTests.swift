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
            /// The audio's pitch in Hz (a test tone's), from its first five seconds.
            var audioFrequency: Int?
            /// Audio packets of those five seconds that did not decode.
            var audioDecodeErrors: Int?
        }

        static func peer(_ name: String) throws -> String {
            guard let root = TestEnvironment.repositoryRoot else { throw IntegrationFailure("the repository is not found") }
            return root.appendingPathComponent("Tests/Peers/\(name)").path
        }

        /// Decodes one `pyav_watch.py` report, recording it in the scenario's notes.
        static func watched(_ scenario: Scenario, _ viewer: ChildProcess, _ label: String) async throws -> Watch? {
            let run = await viewer.finish(timeout: .seconds(60))
            guard scenario.check(run.succeeded, "the PyAV \(label) viewer: \(run)") else { return nil }
            scenario.note("PyAV over \(label): \(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines))")
            return try JSONDecoder().decode(Watch.self, from: Data(run.stdout.utf8))
        }

        /// A viewer that stayed 30 s (`pyav_watch.py`): its video in `codecs` at `width`x`height`,
        /// `minDecoded` pictures decoded without an error, a keyframe first, DTS forward, no
        /// wait over `maxWait` seconds for a picture (500 ms; an HLS reader takes whole
        /// segments, so it waits up to a segment's 2 s and a playlist reload), and the
        /// stream's `audio` (AAC unless told) beside it.
        static func checkStayed(
            _ scenario: Scenario, _ viewer: ChildProcess, _ label: String, video codecs: Set<String> = ["h264"], width: Int, height: Int,
            audio: String = "aac", minDecoded: Int = 800, maxWait: Double = 0.5
        ) async throws {
            guard let watch = try await watched(scenario, viewer, label) else { return }
            scenario.check(watch.video.map(codecs.contains) == true && watch.width == width && watch.height == height,
                           "\(label): video \(watch.video ?? "none") \(watch.width)x\(watch.height), expected \(codecs.sorted()) \(width)x\(height)")
            scenario.check(watch.audio == audio && watch.audioPackets >= 1200, "\(label): audio \(watch.audio ?? "none"), \(watch.audioPackets) packets in 30 s, expected \(audio)")
            scenario.check(watch.decoded >= minDecoded && watch.decodeErrors == 0, "\(label): \(watch.decoded) frames decoded in 30 s (expected \(minDecoded)+), \(watch.decodeErrors) errors")
            scenario.check(watch.firstIsKeyframe == true && watch.dtsRegressions == 0, "\(label): keyframe first \(watch.firstIsKeyframe ?? false), \(watch.dtsRegressions) DTS regressions")
            scenario.check(watch.longestWait < maxWait, "\(label): waited \(watch.longestWait) s for a video frame")
        }

        /// A source rendition MPEG-TS cannot carry (AV1 video, Opus audio) beside the ladder:
        /// the LL-HLS master lists it (`listedAs`) with the rungs (`beside`), the classic master
        /// lists the rungs alone, and the source's TS playlist answers 404.
        static func checkFMP4OnlySource(
            _ scenario: Scenario, _ node: NodeProcess, _ stream: String, listedAs source: String, absentFromClassic excluded: String, beside rungs: String
        ) async throws {
            let listed = await eventually(timeout: .seconds(20), interval: .milliseconds(250)) {
                guard let master = try? await scenario.hlsGet(node, "/\(stream)/llhls.m3u8"), master.status == 200 else { return false }
                return master.bodyText.contains(source) && master.bodyText.contains(rungs)
            }
            scenario.check(listed, "the LL-HLS master of \(stream) does not list \(source) beside \(rungs) rungs")
            let classic = try await scenario.hlsGet(node, "/\(stream)/index.m3u8")
            scenario.check(classic.status == 200 && !classic.bodyText.contains(excluded) && !classic.bodyText.contains("src/") && classic.bodyText.contains(rungs),
                           "the classic master of \(stream) should list the \(rungs) rungs only: \(classic.status) \(classic.bodyText)")
            let tsPlaylist = try await scenario.hlsGet(node, "/\(stream)/src/index.m3u8")
            scenario.check(tsPlaylist.status == 404, "the fMP4-only source of \(stream): its MPEG-TS playlist answered \(tsPlaylist.status)")
        }

        /// A node, and PyAV's FFmpeg publishing a clip of `kind` to `app/name` on it in a loop,
        /// once the stream is live.
        /// The longest wait between pictures allowed to a viewer that reads HLS segments.
        static let hlsMaxWait = 4.5

        /// The LL-HLS source rendition of `stream` (`app/name`), read 4 s by ffprobe: H.264
        /// with Opus at 48 kHz, 100+ Opus packets, DTS forward.
        static func checkOpusOverLLHLS(_ scenario: Scenario, _ node: NodeProcess, _ stream: String, _ label: String) async throws {
            guard let report = try await scenario.probeLive("\(node.httpBase)/\(stream)/src/llhls.m3u8", name: "probe-opus-fmp4", seconds: 4) else { return }
            scenario.check(report.video?.codecName == "h264" && report.audio?.codecName == "opus" && report.audio?.sampleRate == "48000",
                           "LL-HLS of \(label): \(String(describing: report.video)) \(String(describing: report.audio))")
            scenario.check(report.packets(of: report.audio).count >= 100 && report.dtsRegressions(of: report.audio).isEmpty,
                           "LL-HLS of \(label): \(report.packets(of: report.audio).count) Opus packets, DTS regressions \(report.dtsRegressions(of: report.audio).prefix(3))")
        }

        /// Both HLS masters of the multitrack stream `app/name` on `node` list its three tracks
        /// (640x360, 426x240, 320x180), within 15 s.
        static func checkMastersListTracks(_ scenario: Scenario, _ node: NodeProcess, _ stream: String, _ label: String) async {
            for file in ["llhls.m3u8", "index.m3u8"] {
                let listed = await eventually(timeout: .seconds(15), interval: .milliseconds(250)) {
                    guard let master = try? await scenario.hlsGet(node, "/\(stream)/\(file)"), master.status == 200 else { return false }
                    return ["RESOLUTION=640x360", "RESOLUTION=426x240", "RESOLUTION=320x180"].allSatisfy(master.bodyText.contains)
                        && master.bodyText.contains("track1/\(file)") && master.bodyText.contains("track2/\(file)")
                }
                let master = try? await scenario.hlsGet(node, "/\(stream)/\(file)")
                scenario.check(listed, "\(label)'s \(file) master does not list the three tracks: \(master?.bodyText ?? "")")
            }
        }

        /// A viewer of a multitrack stream's second audio track (`audio1`) that stayed 30 s:
        /// AAC alone, 1200+ packets decoded without an error, no wait of 500 ms, and the
        /// second track's 880 Hz tone (the first's is 440 Hz).
        static func checkSecondAudioStayed(_ scenario: Scenario, _ viewer: ChildProcess, _ label: String, maxWait: Double = 0.5) async throws {
            guard let watch = try await watched(scenario, viewer, label) else { return }
            scenario.check(watch.video == nil && watch.audio == "aac" && watch.audioPackets >= 1200 && watch.audioDecodeErrors == 0,
                           "\(label): video \(watch.video ?? "none"), audio \(watch.audio ?? "none"), \(watch.audioPackets) packets in 30 s, \(watch.audioDecodeErrors ?? -1) decode errors")
            scenario.check((860...900).contains(watch.audioFrequency ?? 0), "\(label) is at \(watch.audioFrequency ?? 0) Hz, expected the second track's 880 Hz")
            scenario.check(watch.longestWait < maxWait, "\(label) waited \(watch.longestWait) s for a packet")
        }

        /// Both HLS masters of `stream` list its second audio track (`audio1`) as alternate
        /// audio (`EXT-X-MEDIA:TYPE=AUDIO`, the variants' own audio the default, each with its
        /// `CHANNELS`), not as a
        /// variant, and each of its three video variants names the group.
        static func checkMastersListAlternateAudio(_ scenario: Scenario, _ node: NodeProcess, _ stream: String, _ label: String) async {
            for file in ["llhls.m3u8", "index.m3u8"] {
                func listed(_ master: String) -> Bool {
                    let variants = master.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-STREAM-INF:") }
                    // Both tracks are stereo AAC: each entry says so (CHANNELS).
                    return master.contains("#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"audio\",NAME=\"main\",DEFAULT=YES,AUTOSELECT=YES,CHANNELS=\"2\"\n")
                        && master.contains("CHANNELS=\"2\",URI=\"audio1/\(file)") && !master.contains("\naudio1/\(file)")
                        && variants.count == 3 && variants.allSatisfy { $0.contains("AUDIO=\"audio\"") }
                }
                let found = await eventually(timeout: .seconds(15), interval: .milliseconds(250)) {
                    guard let master = try? await scenario.hlsGet(node, "/\(stream)/\(file)"), master.status == 200 else { return false }
                    return listed(master.bodyText)
                }
                let master = try? await scenario.hlsGet(node, "/\(stream)/\(file)")
                scenario.check(found, "\(label)'s \(file) master does not list audio1 as alternate audio: \(master?.bodyText ?? "")")
            }
        }

        static func publishing(
            _ scenario: Scenario, _ kind: MediaKind, to app: String, _ name: String, nodeArguments: [String] = []
        ) async throws -> (node: NodeProcess, publisher: ChildProcess) {
            let media = try await MediaLibrary.shared.file(kind)
            let node = try await scenario.startNode(label: "node", arguments: nodeArguments)
            let publisher = try scenario.launch(
                executable: try TestEnvironment.python3(), [try peer("pyav_publish.py"), media.url.path, node.rtmpURL(app, name)], name: "pyav-publisher"
            )
            try await scenario.waitUntilLive(node, app, name, timeout: .seconds(20))
            return (node, publisher)
        }

        @Test("An HEVC source published over Enhanced RTMP is transcoded into the H.264 ladder: a viewer stays 30 s on the 240p rung and decodes H.264 426x240 with audio, and the master lists the rungs beside the HEVC source")
        func hevcSourceFeedsTheH264Ladder() async throws {
            try await Scenario.run("ertmp-hevc-ladder") { scenario in
                let (node, _) = try await Self.publishing(scenario, .hevcAudioVideo, to: "abr", "hevc")
                let python = try TestEnvironment.python3()
                try await scenario.waitUntilLive(node, "abr", "hevc_240p", timeout: .seconds(30))

                let watcher = try Self.peer("pyav_watch.py")
                let rung = try scenario.launch(executable: python, [watcher, node.flvURL("abr", "hevc_240p"), "30"], name: "pyav-240p-viewer")
                // An RTMP player that announces no enhanced codec (no fourCcList) asks for the
                // HEVC source: it is given the stream's tallest H.264 rung instead.
                let legacy = try scenario.launch(executable: python, [watcher, node.rtmpURL("abr", "hevc"), "30", "--announce", ""], name: "pyav-legacy-rtmp-viewer")
                let listed = await eventually(timeout: .seconds(20), interval: .milliseconds(250)) {
                    guard let master = try? await scenario.hlsGet(node, "/abr/hevc/llhls.m3u8"), master.status == 200 else { return false }
                    return master.bodyText.contains("CODECS=\"hvc1.") && master.bodyText.contains("CODECS=\"avc1.")
                }
                scenario.check(listed, "the LL-HLS master of the HEVC stream does not list the HEVC source beside H.264 rungs")
                try await Self.checkStayed(scenario, rung, "240p rung", width: 426, height: 240)
                // The source is 360p: the ladder's tallest rung is 360p.
                try await Self.checkStayed(scenario, legacy, "RTMP without fourCcList (the HEVC source's tallest H.264 rung)", width: 640, height: 360)
                let metrics = try await node.metrics().text
                scenario.check(metrics.contains("estuary_play_codec_mismatches_total{outcome=\"fallback\"} 1"), "the fallback is not counted: \(metrics.split(separator: "\n").filter { $0.contains("codec_mismatch") })")
            }
        }

        @Test("Opus published over Enhanced RTMP: an RTMP viewer that announced Opus and an LL-HLS (fMP4) viewer stay 30 s and decode Opus beside H.264; an RTMP viewer that did not announce Opus stays 30 s on the ladder's tallest rung, H.264 and AAC; the LL-HLS master names opus, the classic (TS) master leaves the Opus rendition out and lists the ladder's rungs, which the transcoder re-encodes to AAC (a viewer stays 30 s on one); an SRT player stays 32 s and gets every frame, Opus in MPEG-TS; without a ladder the classic master answers 404 naming llhls.m3u8, and an RTMP play that did not announce Opus gets the stream as published, its H.264 decodable")
        func opusReachesFMP4RTMPAndTheLadder() async throws {
            try await Scenario.run("ertmp-opus") { scenario in
                let srtPort = try await FreePorts.allocate(1)[0]
                let (node, _) = try await Self.publishing(scenario, .opusAudioVideo, to: "abr", "opus", nodeArguments: ["--srt-port", String(srtPort)])
                let python = try TestEnvironment.python3()
                let watcher = try Self.peer("pyav_watch.py")
                // FFmpeg puts audio FourCCs in the same fourCcList as video ones.
                let rtmp = try scenario.launch(executable: python, [watcher, node.rtmpURL("abr", "opus"), "30", "--announce", "hvc1,av01,vp09,Opus"], name: "pyav-rtmp-viewer")
                let hls = try scenario.launch(executable: python, [watcher, "\(node.httpBase)/abr/opus/src/llhls.m3u8", "30"], name: "pyav-opus-hls-viewer")
                try await scenario.waitUntilLive(node, "abr", "opus_240p", timeout: .seconds(30))
                try await scenario.waitUntilLive(node, "abr", "opus_360p", timeout: .seconds(30))
                let rung = try scenario.launch(executable: python, [watcher, node.flvURL("abr", "opus_240p"), "30"], name: "pyav-240p-viewer")
                // An RTMP player that announced enhanced video but not Opus asks for the source:
                // it is given the tallest rung, whose audio the transcoder made AAC.
                let notOpus = try scenario.launch(executable: python, [watcher, node.rtmpURL("abr", "opus"), "30"], name: "pyav-rtmp-viewer-without-opus")
                // An SRT player that stays 32 s: ffmpeg records the MPEG-TS it is sent (Opus with its control headers).
                let srtRecording = scenario.file("srt-opus.ts")
                let srtPlayer = try SRTTests.recordOverSRT(scenario, port: srtPort, streamID: "read:abr/opus", into: srtRecording, name: "ffmpeg-srt-viewer")

                try await Self.checkFMP4OnlySource(scenario, node, "abr/opus", listedAs: ",opus\"", absentFromClassic: "opus", beside: "mp4a.40.2")
                try await Self.checkOpusOverLLHLS(scenario, node, "abr/opus", "the Opus stream")

                try await Self.checkStayed(scenario, rtmp, "RTMP (Opus)", width: 640, height: 360, audio: "opus")
                try await Self.checkStayed(scenario, hls, "LL-HLS (Opus, fMP4)", width: 640, height: 360, audio: "opus", maxWait: Self.hlsMaxWait)
                try await Self.checkStayed(scenario, rung, "240p rung of the Opus stream (AAC)", width: 426, height: 240)
                // The source is 360p: the ladder's tallest rung is 360p.
                try await Self.checkStayed(scenario, notOpus, "RTMP without Opus announced (the tallest rung, AAC)", width: 640, height: 360)
                // The SRT player stayed 32 s and was not dropped: every frame, Opus beside H.264, timestamps forward.
                let srtRun = await srtPlayer.finish(timeout: .seconds(30))
                scenario.check(srtRun.succeeded, "the SRT player of the Opus stream: \(srtRun)")
                if let report = try await scenario.probeLive(srtRecording.path, name: "probe-opus-srt", seconds: 60) {
                    let video = report.packets(of: report.video), audio = report.packets(of: report.audio)
                    scenario.check(report.video?.codecName == "h264" && report.audio?.codecName == "opus",
                                   "SRT of the Opus stream: \(String(describing: report.video)) \(String(describing: report.audio))")
                    scenario.check(video.count >= 900 && audio.count >= 1500 && video.first?.isKeyframe == true,
                                   "SRT of the Opus stream over 32 s: \(video.count) video and \(audio.count) Opus packets, keyframe first \(video.first?.isKeyframe ?? false)")
                    scenario.check(report.dtsRegressions(of: report.video).isEmpty && report.dtsRegressions(of: report.audio).isEmpty,
                                   "SRT of the Opus stream: DTS regressions \(report.dtsRegressions(of: report.video).prefix(3)) \(report.dtsRegressions(of: report.audio).prefix(3))")
                }

                // Without a ladder nothing is in MPEG-TS: the classic master says where to play.
                let media = try await MediaLibrary.shared.file(.opusAudioVideo)
                _ = try scenario.launch(executable: python, [try Self.peer("pyav_publish.py"), media.url.path, node.rtmpURL("live", "opus")], name: "pyav-live-publisher")
                try await scenario.waitUntilLive(node, "live", "opus", timeout: .seconds(20))
                let fragmentedOnly = await eventually(timeout: .seconds(20), interval: .milliseconds(250)) {
                    guard let master = try? await scenario.hlsGet(node, "/live/opus/llhls.m3u8") else { return false }
                    return master.status == 200 && master.bodyText.contains("CODECS=\"avc1.") && master.bodyText.contains(",opus\"")
                }
                scenario.check(fragmentedOnly, "the LL-HLS master of live/opus does not list H.264 + Opus")
                let noTS = try await scenario.hlsGet(node, "/live/opus/index.m3u8")
                scenario.check(noTS.status == 404 && noTS.bodyText.contains("llhls.m3u8"), "the classic master of an Opus stream without a ladder: \(noTS.status) \(noTS.bodyText)")
                // No rung to fall back to: a legacy RTMP player still gets the H.264 picture it
                // decodes, the stream as published (counted).
                let legacy = try scenario.launch(executable: python, [watcher, node.rtmpURL("live", "opus"), "5", "--announce", ""], name: "pyav-legacy-viewer-of-opus")
                if let watch = try await Self.watched(scenario, legacy, "legacy RTMP of live/opus (Opus, no ladder)") {
                    scenario.check(watch.video == "h264" && watch.width == 640 && watch.decoded >= 100 && watch.decodeErrors == 0,
                                   "a legacy RTMP play of live/opus: \(watch)")
                }
                let metrics = try await node.metrics().text
                scenario.check(metrics.contains("estuary_play_codec_mismatches_total{outcome=\"fallback\"} 1") && metrics.contains("estuary_play_codec_mismatches_total{outcome=\"unannounced_audio\"} 1"),
                               "one fallback and one play sent as published should be counted: \(metrics.split(separator: "\n").filter { $0.contains("codec_mismatch") })")
            }
        }

        @Test("AV1 published over Enhanced RTMP: HTTP-FLV watched 30 s and decoded as AV1; LL-HLS (fMP4) names av01 and ffprobe reads it, while the classic (TS) master leaves the AV1 rendition out; the transcoder decodes it into the H.264 ladder, whose 240p rung a viewer watches 30 s; the fMP4-only AV1 rendition is watched 30 s over LL-HLS")
        func av1ReachesFMP4AndTheLadder() async throws {
            try await Scenario.run("ertmp-av1") { scenario in
                let (node, _) = try await Self.publishing(scenario, .av1AudioVideo, to: "abr", "av1")
                let python = try TestEnvironment.python3()
                let watcher = try Self.peer("pyav_watch.py")
                let flv = try scenario.launch(executable: python, [watcher, node.flvURL("abr", "av1"), "30"], name: "pyav-flv-viewer")
                try await scenario.waitUntilLive(node, "abr", "av1_240p", timeout: .seconds(30))
                let rung = try scenario.launch(executable: python, [watcher, node.flvURL("abr", "av1_240p"), "30"], name: "pyav-240p-viewer")
                // The AV1 rendition's fMP4-only segments, read by a viewer that stays 30 s too.
                let hls = try scenario.launch(executable: python, [watcher, "\(node.httpBase)/abr/av1/src/llhls.m3u8", "30"], name: "pyav-av1-hls-viewer")

                try await Self.checkFMP4OnlySource(scenario, node, "abr/av1", listedAs: "CODECS=\"av01.0.01M.08", absentFromClassic: "av01", beside: "avc1.")
                if let report = try await scenario.probeLive("\(node.httpBase)/abr/av1/src/llhls.m3u8", name: "probe-av1-fmp4", seconds: 4) {
                    let video = report.packets(of: report.video)
                    scenario.check(report.video?.codecName == "av1" && report.video?.width == 640 && report.audio?.codecName == "aac",
                                   "LL-HLS of the AV1 stream: \(String(describing: report.video)) \(String(describing: report.audio))")
                    scenario.check(video.count >= 60 && video.first?.isKeyframe == true && report.dtsRegressions(of: report.video).isEmpty,
                                   "LL-HLS of the AV1 stream: \(video.count) video packets, keyframe first: \(video.first?.isKeyframe ?? false)")
                }

                try await Self.checkStayed(scenario, flv, "HTTP-FLV (AV1)", video: ["av1", "libdav1d"], width: 640, height: 360)
                try await Self.checkStayed(scenario, rung, "240p rung of AV1", width: 426, height: 240)
                try await Self.checkStayed(scenario, hls, "LL-HLS (AV1, fMP4)", video: ["av1", "libdav1d"], width: 640, height: 360, maxWait: Self.hlsMaxWait)
            }
        }

        @Test("An Enhanced RTMP v2 multitrack publisher (PyAV's FFmpeg 8 remuxing three H.264 streams and two AAC streams) is one publisher whose tracks are renditions: each is watched 30 s over HTTP-FLV or RTMP, and one over LL-HLS, at its own size with the publisher's first audio track; the second audio track is an audio-only rendition watched 30 s at its own pitch, listed by both HLS masters as alternate audio beside the three video tracks with their resolutions; nothing is transcoded")
        func multitrackPublisherIsALadder() async throws {
            try await Scenario.run("ertmp-multitrack") { scenario in
                let (node, publisher) = try await Self.publishing(scenario, .multitrackAudioVideo, to: "live", "mt", nodeArguments: ["--admin-token", SessionsTests.token])
                let python = try TestEnvironment.python3()
                try await scenario.waitUntilLive(node, "live", "mt/track1", timeout: .seconds(10))
                try await scenario.waitUntilLive(node, "live", "mt/track2", timeout: .seconds(10))
                try await scenario.waitUntilLive(node, "live", "mt/audio1", timeout: .seconds(10))

                // The viewers that stay, one per rendition: track 0 over RTMP, tracks 1 and 2 over HTTP-FLV.
                let watcher = try Self.peer("pyav_watch.py")
                // And track 1's LL-HLS, whose segments are cut from the track's own hub.
                let viewers = [
                    ("track 0 (RTMP)", 640, 360, 0.5, try scenario.launch(executable: python, [watcher, node.rtmpURL("live", "mt"), "30"], name: "pyav-track0")),
                    ("track 1 (HTTP-FLV)", 426, 240, 0.5, try scenario.launch(executable: python, [watcher, node.flvURL("live", "mt/track1"), "30"], name: "pyav-track1")),
                    ("track 2 (HTTP-FLV)", 320, 180, 0.5, try scenario.launch(executable: python, [watcher, node.flvURL("live", "mt/track2"), "30"], name: "pyav-track2")),
                    ("track 1 (LL-HLS)", 426, 240, Self.hlsMaxWait,
                     try scenario.launch(executable: python, [watcher, "\(node.httpBase)/live/mt/track1/llhls.m3u8", "30"], name: "pyav-track1-hls")),
                ]
                // The second audio track, an audio-only rendition of its own: its 880 Hz tone.
                let secondAudio = try scenario.launch(executable: python, [watcher, node.flvURL("live", "mt/audio1"), "30"], name: "pyav-audio1")
                // And over LL-HLS, the playlist the masters name as alternate audio.
                let secondAudioHLS = try scenario.launch(executable: python, [watcher, "\(node.httpBase)/live/mt/audio1/llhls.m3u8", "30"], name: "pyav-audio1-hls")
                // One publisher session and a session per added track, with the publisher's address.
                let publishers = ((try? await SessionsTests.sessions(node, "?kind=publish")) ?? []).filter { ($0["path"] as? String)?.hasPrefix("live/mt") == true }
                scenario.check(Set(publishers.compactMap { $0["path"] as? String }) == ["live/mt", "live/mt/track1", "live/mt/track2", "live/mt/audio1"],
                               "the multitrack publisher's sessions: \(publishers)")
                await Self.checkMastersListTracks(scenario, node, "live/mt", "the node")
                await Self.checkMastersListAlternateAudio(scenario, node, "live/mt", "the node")
                if let report = try await scenario.probeLive("\(node.httpBase)/live/mt/audio1/llhls.m3u8", name: "probe-audio1-fmp4", seconds: 4) {
                    scenario.check(report.video == nil && report.audio?.codecName == "aac",
                                   "LL-HLS of audio track 1: \(String(describing: report.video)) \(String(describing: report.audio))")
                }
                if let report = try await scenario.probeLive("\(node.httpBase)/live/mt/track2/llhls.m3u8", name: "probe-track2-fmp4", seconds: 4) {
                    scenario.check(report.video?.codecName == "h264" && report.video?.width == 320 && report.audio?.codecName == "aac",
                                   "LL-HLS of track 2: \(String(describing: report.video)) \(String(describing: report.audio))")
                }
                for (label, width, height, maxWait, viewer) in viewers {
                    try await Self.checkStayed(scenario, viewer, label, width: width, height: height, maxWait: maxWait)
                }
                // The first audio track is every video rendition's, alone (6 s of 48 kHz AAC is
                // 281 packets, with a cached GOP's worth more: two tracks mixed would be twice
                // that), at its 440 Hz; the second is its own rendition's, at 880 Hz, watched 30 s.
                if let watch = try await Self.watched(scenario, try scenario.launch(executable: python, [watcher, node.flvURL("live", "mt"), "6"], name: "pyav-audio-check"), "track 0 (audio check)") {
                    scenario.check(watch.audio == "aac" && (250...400).contains(watch.audioPackets), "track 0 over 6 s: \(watch.audioPackets) AAC packets (one track is about 281 + a GOP)")
                    scenario.check((420...460).contains(watch.audioFrequency ?? 0), "track 0's audio is at \(watch.audioFrequency ?? 0) Hz, expected the first track's 440 Hz")
                }
                try await Self.checkSecondAudioStayed(scenario, secondAudio, "audio track 1 (HTTP-FLV)")
                try await Self.checkSecondAudioStayed(scenario, secondAudioHLS, "audio track 1 (LL-HLS)", maxWait: Self.hlsMaxWait)
                let metrics = try await node.metrics().text
                let droppedAudio = metrics.split(separator: "\n").first { $0.hasPrefix("estuary_rtmp_audio_tracks_dropped_total ") }
                scenario.check(droppedAudio.map { Double($0.split(separator: " ").last ?? "") == 0 } ?? true, "an audio track was dropped: \(droppedAudio ?? "")")
                scenario.check(publisher.isRunning, "the publisher of two audio tracks was disconnected")
                // An encoder-made ladder costs no encoding: no transcoder job ran.
                let encoded = metrics.split(separator: "\n").filter { $0.hasPrefix("estuary_transcode_encoded_frames_total") }
                scenario.check(encoded.allSatisfy { $0.hasSuffix(" 0") }, "a transcoder encoded for the multitrack stream: \(encoded)")
                scenario.check(publishers.allSatisfy { $0["protocol"] as? String == "rtmp" }, "the tracks' sessions are not the publisher's protocol: \(publishers)")
                // The publisher goes: its tracks' sessions end with its own.
                publisher.send(signal: SIGKILL)
                let ended = await eventually(timeout: .seconds(10), interval: .milliseconds(250)) {
                    ((try? await SessionsTests.sessions(node, "?kind=publish")) ?? []).allSatisfy { ($0["path"] as? String)?.hasPrefix("live/mt") != true }
                }
                scenario.check(ended, "the multitrack publisher's sessions outlived its connection")
            }
        }

        @Test("Headless Chromium plays a multitrack stream's two masters natively for 30 s each without a stall, and lists the alternate audio group as the video's audio tracks (main, audio1)", .enabled(if: BrowserSupport.missing == nil, "needs chromium and Playwright for Python"))
        func browserPlaysTheAlternateAudioGroup() async throws {
            try await Scenario.run("ertmp-multitrack-browser") { scenario in
                let (node, publisher) = try await Self.publishing(scenario, .multitrackAudioVideo, to: "live", "mt")
                try await scenario.waitUntilLive(node, "live", "mt/audio1", timeout: .seconds(10))
                await Self.checkMastersListAlternateAudio(scenario, node, "live/mt", "the node")
                // Chromium's native player cannot start a rendition that has a single segment
                // (docs/status.md): it starts once each has three.
                for rendition in ["src", "track1", "track2", "audio1"] {
                    let ready = await eventually(timeout: .seconds(20), interval: .milliseconds(250)) {
                        guard let response = try? await scenario.hlsGet(node, "/live/mt/\(rendition)/llhls.m3u8"), response.status == 200,
                              let playlist = try? MediaPlaylist.parse(response.bodyText) else { return false }
                        return playlist.complete.count >= 3
                    }
                    try scenario.require(ready, "\(rendition) did not get three segments")
                }
                let script = try #require(BrowserSupport.script)
                for file in ["llhls.m3u8", "index.m3u8"] {
                    let screenshot = scenario.file("browser-mt-\(file).png")
                    // 30 s of media within 36 s of wall time, never standing still 3 s; the
                    // start waits for the renditions' first segments.
                    let run = try await ChildProcess.run(
                        TestEnvironment.python3(),
                        [script.path, "\(node.httpBase)/live/mt/\(file)", screenshot.path, "--advance", "30", "--within", "36",
                         "--max-stall", "3", "--start-timeout", "20", "--audio-tracks", "main,audio1"],
                        name: "browser-mt-\(file)", directory: scenario.directory, timeout: .seconds(90)
                    )
                    scenario.check(run.succeeded, "Chromium did not play the multitrack \(file) master: \(run)\nstdout: \(run.stdout)")
                    scenario.check(fileSize(screenshot) > 5000, "the screenshot of \(file) is \(fileSize(screenshot)) bytes: blank?")
                    scenario.note("browser \(file): \(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines))")
                }
                scenario.check(publisher.isRunning, "the multitrack publisher was disconnected")
            }
        }

        @Test("A publisher that comes back within the grace period as a multitrack publisher gets its new tracks on the stream's timeline: 10 s of a single-track stream, then PyAV's multitrack publisher, whose clock starts again at 0; the added video and audio tracks' timestamps, read beside the main rendition's over HTTP-FLV, are within 0.5 s of the main's, not 10 s behind, and the added video track's audio (the publisher's) is in step with its video; the three viewers stay 30 s without a gap")
        func tracksAddedOnAReconnectJoinTheStreamTimeline() async throws {
            try await Scenario.run("ertmp-multitrack-reconnect") { scenario in
                let single = try await MediaLibrary.shared.file(.gopAudioVideo)
                let multitrack = try await MediaLibrary.shared.file(.multitrackAudioVideo)
                let node = try await scenario.startNode(label: "node")
                let first = try scenario.publish(single, to: node.rtmpURL("live", "mt"), name: "single-track-publisher", loop: true)
                try await scenario.waitUntilLive(node, "live", "mt")
                try await Task.sleep(for: .seconds(10))
                first.send(signal: SIGKILL)
                // Back well within the 10 s grace period, from the same address (its owner).
                let python = try TestEnvironment.python3()
                let second = try scenario.launch(
                    executable: python, [try Self.peer("pyav_publish.py"), multitrack.url.path, node.rtmpURL("live", "mt")], name: "pyav-multitrack-publisher"
                )
                try await scenario.waitUntilLive(node, "live", "mt/track1", timeout: .seconds(20))
                try await scenario.waitUntilLive(node, "live", "mt/audio1", timeout: .seconds(10))
                try await Task.sleep(for: .seconds(3))
                // Three viewers read at once; at the same moment, each one's latest frame is
                // its hub's live edge, where a player joins the renditions by timestamp.
                let main = try await scenario.openViewer(node, "live", "mt")
                let track = try await scenario.openViewer(node, "live", "mt/track1")
                let audio = try await scenario.openViewer(node, "live", "mt/audio1")
                try await Task.sleep(for: .seconds(4))
                func latest(_ viewer: HTTPFLVViewer, video: Bool) throws -> Int64? {
                    try viewer.flv().tags.filter { $0.isMediaFrame && $0.isVideo == video }.map { Int64($0.timestamp) }.max()
                }
                let (mainVideo, mainAudio) = (try latest(main, video: true), try latest(main, video: false))
                let (trackVideo, trackAudio, secondAudio) = (try latest(track, video: true), try latest(track, video: false), try latest(audio, video: false))
                scenario.note("latest timestamps (ms): main video \(mainVideo ?? -1), main audio \(mainAudio ?? -1), track1 video \(trackVideo ?? -1), track1 audio \(trackAudio ?? -1), audio1 \(secondAudio ?? -1)")
                guard let mainVideo, let mainAudio, let trackVideo, let trackAudio, let secondAudio else {
                    scenario.check(false, "a rendition had no frames")
                    return
                }
                scenario.check(mainVideo > 10_000, "the main rendition's timeline did not continue the first publisher's: latest \(mainVideo) ms")
                // Within a wake-up interval and the two tracks' interleaving in the publisher's tags.
                scenario.check(abs(trackVideo - mainVideo) < 500, "track 1's video is \(trackVideo - mainVideo) ms from the main video's timeline")
                scenario.check(abs(secondAudio - mainAudio) < 500, "audio track 1 is \(secondAudio - mainAudio) ms from the main audio's timeline")
                // Track 1 carries the publisher's audio, in step with its own video, and its
                // timestamps and audio1's run on (a frame every 21 ms, never one repeated).
                scenario.check(abs(trackAudio - trackVideo) < 500, "track 1's audio is \(trackAudio - trackVideo) ms from its video")
                for (viewer, label) in [(track, "track 1's audio"), (audio, "audio track 1")] {
                    let stamps = try viewer.flv().tags.filter { $0.isMediaFrame && $0.isAudio }.map(\.timestamp)
                    let steps = zip(stamps, stamps.dropFirst()).map { Int64($1) - Int64($0) }
                    scenario.check(stamps.count >= 150 && steps.allSatisfy { (1...100).contains($0) },
                                   "\(label): \(stamps.count) frames in 4 s, steps outside 1–100 ms: \(steps.filter { !(1...100).contains($0) }.prefix(5))")
                }
                // The three stay 30 s in all on the renditions the reconnect made: none is
                // dropped, and each one's frames run on without a gap of a second.
                try await Task.sleep(for: .seconds(26))
                for (viewer, label, video) in [(main, "the main rendition", true), (track, "track 1", true), (audio, "audio track 1", false)] {
                    let stamps = try viewer.flv().tags.filter { $0.isMediaFrame && $0.isVideo == video }.map { Int64($0.timestamp) }
                    let longestStep = zip(stamps, stamps.dropFirst()).map { $1 - $0 }.max() ?? .max
                    scenario.check(!viewer.isClosed && (stamps.last ?? 0) - (stamps.first ?? 0) >= 28_000 && longestStep < 1000,
                                   "\(label) over 30 s: closed \(viewer.isClosed), \(stamps.count) frames spanning \((stamps.last ?? 0) - (stamps.first ?? 0)) ms, longest step \(longestStep) ms")
                }
                scenario.check(second.isRunning, "the multitrack publisher was disconnected")
            }
        }

        @Test("A multitrack publisher's track that stops while the others go on is ended (its session leaves, counted), not left to stall its players; when the encoder sends it again (the clip loops) it opens again from its kept configuration and plays at its size")
        func aSilentTrackEndsAndComesBack() async throws {
            try await Scenario.run("ertmp-multitrack-silent-track") { scenario in
                // An idle check every 2 s: a track silent for one is ended.
                let config = scenario.file("node.json")
                try Data(#"{"publisherIdleTimeoutSeconds": 6}"#.utf8).write(to: config)
                let media = try await MediaLibrary.shared.file(.multitrackTrackStops)
                let node = try await scenario.startNode(label: "node", arguments: ["--config", config.path, "--admin-token", SessionsTests.token])
                // The muxer must not hold the others back for the stream that ended.
                let publisher = try scenario.launch(
                    executable: try TestEnvironment.python3(),
                    [try Self.peer("pyav_publish.py"), media.url.path, node.rtmpURL("live", "mt"), "--interleave-delta-us", "100000"], name: "pyav-publisher"
                )
                try await scenario.waitUntilLive(node, "live", "mt", timeout: .seconds(20))
                func publishing() async -> Set<String> {
                    Set(((try? await SessionsTests.sessions(node, "?kind=publish")) ?? []).compactMap { $0["path"] as? String })
                }
                let opened = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) { await publishing().contains("live/mt/track1") }
                let afterOpen = await publishing()
                scenario.check(opened, "track 1 was never published: \(afterOpen)")
                // Track 1 stops 8 s into the clip; the others go on to 20 s.
                // Ended at the second idle check after it stopped: 2 to 4 s after.
                let ended = await eventually(timeout: .seconds(16), interval: .milliseconds(250)) {
                    let paths = await publishing()
                    return !paths.contains("live/mt/track1") && paths.isSuperset(of: ["live/mt", "live/mt/track2"])
                }
                let afterStop = await publishing()
                scenario.check(ended, "the silent track 1 was not ended while the others went on: \(afterStop)")
                scenario.check(node.log.contains("video track 1 sent nothing since the last idle check"), "the log does not say why track 1 ended")
                let metrics = try await node.metrics().text
                scenario.check(metrics.split(separator: "\n").contains { $0.hasPrefix("estuary_rtmp_tracks_silent_total ") && !$0.hasSuffix(" 0") },
                               "the silent track was not counted")
                // The clip loops at 20 s: track 1 sends again, without a new configuration.
                let back = await eventually(timeout: .seconds(25), interval: .milliseconds(250)) { await publishing().contains("live/mt/track1") }
                let afterLoop = await publishing()
                scenario.check(back, "track 1 did not open again when the encoder sent it again: \(afterLoop)")
                if back, let report = try await scenario.probeLive(node.flvURL("live", "mt/track1"), name: "probe-track1-back", seconds: 3) {
                    scenario.checkLivePlayback(report, "track 1 after it came back", minVideoPackets: 60, width: 426)
                }
                scenario.check(publisher.isRunning, "the multitrack publisher was disconnected")
            }
        }

        @Test("HEVC published over Enhanced RTMP by PyAV's FFmpeg reaches every viewer: RTMP play (E-RTMP, PyAV) and HTTP-FLV (PyAV) watched 30 s, every frame decoded, with audio; LL-HLS (fMP4) with CODECS hvc1 and TS HLS, read by ffprobe")
        func hevcReachesEveryViewer() async throws {
            try await Scenario.run("ertmp-hevc") { scenario in
                let (node, _) = try await Self.publishing(scenario, .hevcAudioVideo, to: "live", "hevc")
                let python = try TestEnvironment.python3()

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

                // rtmpdump (librtmp) announces no enhanced codec, and the stream has no ladder:
                // a clear NetStream.Play.Failed, not HEVC bytes it cannot decode.
                let refused = try await scenario.run("rtmpdump", ["-r", node.rtmpURL("live", "hevc"), "-v", "-B", "5", "-o", scenario.directory.appendingPathComponent("legacy.flv").path], name: "rtmpdump-legacy", timeout: .seconds(20))
                scenario.check(refused.stderr.contains("NetStream.Play.Failed"), "rtmpdump of the HEVC stream was not told NetStream.Play.Failed: \(refused.stderr.suffix(600))")
                scenario.check(node.log.contains("did not announce the stream's codec"), "the codec refusal is not logged")
                for (label, viewer) in [("HTTP-FLV", flv), ("RTMP", rtmp)] {
                    try await Self.checkStayed(scenario, viewer, label, video: ["hevc"], width: 640, height: 360, minDecoded: 850)
                }
            }
        }
    }
}
