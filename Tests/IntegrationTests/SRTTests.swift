import CSRT
import Foundation
import TestSupport
import Testing

extension IntegrationTests {
    /// Issue 26, SRT: MPEG-TS publishers over SRT (ffmpeg's `srt://`), played over every
    /// protocol and through the transcoder; stream ids refused with SRT's rejection codes.
    @Suite("SRT")
    struct SRTTests {
        /// ffmpeg publishing a clip over SRT in a loop: `-c copy` into MPEG-TS, as an encoder does.
        static func publishOverSRT(_ scenario: Scenario, media: MediaFile, port: Int, streamID: String, name: String) throws -> ChildProcess {
            let url = "srt://127.0.0.1:\(port)?streamid=\(streamID)&latency=120000"
            let process = try scenario.launch(
                "ffmpeg",
                ["-nostdin", "-hide_banner", "-loglevel", "warning", "-stream_loop", "-1", "-re", "-i", media.url.path,
                 "-c", "copy", "-f", "mpegts", url],
                name: name
            )
            scenario.note("\(name) publishing over SRT to \(url)")
            return process
        }

        /// ffmpeg publishing 2 s of a test pattern over SRT with `streamID`, to its end (a
        /// refused caller's run fails, saying "reject").
        static func publishTwoSeconds(_ scenario: Scenario, port: Int, streamID: String, name: String) async throws -> ToolRun {
            try await scenario.run(
                "ffmpeg", ["-nostdin", "-hide_banner", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=10", "-t", "2", "-c:v", "libx264",
                           "-f", "mpegts", "srt://127.0.0.1:\(port)?streamid=\(streamID)"],
                name: name, timeout: .seconds(20)
            )
        }

        /// ffmpeg as an SRT player that stays: it records `seconds` of `streamID` from `port`
        /// (MPEG-TS, as sent) into `recording`.
        static func recordOverSRT(_ scenario: Scenario, port: Int, streamID: String, seconds: Int = 32, into recording: URL, name: String) throws -> ChildProcess {
            try scenario.launch(
                "ffmpeg",
                ["-nostdin", "-hide_banner", "-loglevel", "warning", "-i", "srt://127.0.0.1:\(port)?streamid=\(streamID)&latency=120000",
                 "-t", String(seconds), "-map", "0", "-c", "copy", "-f", "mpegts", recording.path],
                name: name
            )
        }

        /// What an SRT player's 30 s recording must hold: H.264 (or `videoCodec`) and AAC from
        /// a keyframe on, 850+ video frames, DTS forward on both tracks without a step of
        /// 500 ms, 1200+ audio packets, audio and video within 300 ms of each other at the end.
        static func checkRecording(_ scenario: Scenario, _ recording: URL, _ label: String, videoCodec: String = "h264") async throws {
            guard let report = try await scenario.probe(recording.path, name: "probe-\(label.replacingOccurrences(of: " ", with: "-"))") else { return }
            scenario.checkLivePlayback(report, label, minVideoPackets: 850, width: 640, videoCodec: videoCodec)
            scenario.check(report.dtsRegressions(of: report.audio).isEmpty, "\(label): audio DTS regressions: \(report.dtsRegressions(of: report.audio).prefix(3))")
            // A continuous timeline: no video DTS step over 500 ms (90 kHz).
            let dts = report.packets(of: report.video).compactMap(\.dts)
            let steps = zip(dts, dts.dropFirst()).map { ($1 - $0) / 90 }
            scenario.check((steps.max() ?? 0) < 500, "\(label): the video skips \(steps.max() ?? 0) ms")
            let audio = report.packets(of: report.audio)
            scenario.check(audio.count >= 1200, "\(label): \(audio.count) audio packets in 30 s, expected 1200+")
            if let video = report.packets(of: report.video).last?.dts, let last = audio.last?.dts {
                // 90 kHz in TS.
                let offset = abs(video - last) / 90
                scenario.note("\(label): A/V offset at the end: \(offset) ms")
                scenario.check(offset < 300, "\(label): audio and video apart by \(offset) ms")
            }
        }

        /// What a viewer that stayed 30 s must have seen: no wait of 500 ms or more, not
        /// dropped, FLV that parses with timestamps forward, and `minVideoFrames` frames.
        static func checkStayed(_ scenario: Scenario, _ viewer: HTTPFLVViewer, _ label: String, longestWait: Duration, minVideoFrames: Int) throws -> FLVStream {
            scenario.check(longestWait < .milliseconds(500), "\(label) of the SRT stream saw nothing for \(longestWait)")
            scenario.check(!viewer.isClosed, "\(label) was dropped")
            let flv = try viewer.flv()
            scenario.check(flv.error == nil && flv.timestampRegressions().isEmpty, "\(label)'s FLV: \(flv.error ?? "") regressions \(flv.timestampRegressions().prefix(3))")
            scenario.check(flv.videoFrames.count >= minVideoFrames, "\(label): \(flv.videoFrames.count) video frames in 30 s, expected \(minVideoFrames)+")
            return flv
        }

        @Test("An HEVC publisher over SRT (ffmpeg, libx265, as hardware encoders send): PyAV watches HTTP-FLV 30 s and decodes HEVC at 640x360 with AAC, every frame, a keyframe first; an SRT player records 32 s of HEVC that decodes; LL-HLS names hvc1 and ffprobe reads it; the transcoder's 240p rung plays H.264")
        func hevcPublishedOverSRT() async throws {
            try await Scenario.run("srt-hevc") { scenario in
                let media = try await MediaLibrary.shared.file(.hevcAudioVideo)
                let srtPort = try await FreePorts.allocate(1)[0]
                let node = try await scenario.startNode(label: "node", arguments: ["--srt-port", String(srtPort)])
                _ = try Self.publishOverSRT(scenario, media: media, port: srtPort, streamID: "publish:abr/hevc", name: "srt-hevc-publisher")
                try await scenario.waitUntilLive(node, "abr", "hevc", timeout: .seconds(15))
                let python = try TestEnvironment.python3()
                let viewer = try scenario.launch(executable: python, [try EnhancedRTMPTests.peer("pyav_watch.py"), node.flvURL("abr", "hevc"), "30"], name: "pyav-hevc-viewer")
                // And an SRT player of it: HEVC muxed back into MPEG-TS.
                let recording = scenario.file("srt-hevc-player.ts")
                let player = try Self.recordOverSRT(scenario, port: srtPort, streamID: "read:abr/hevc", into: recording, name: "ffmpeg-srt-hevc-player")

                let listed = await eventually(timeout: .seconds(20), interval: .milliseconds(250)) {
                    guard let master = try? await scenario.hlsGet(node, "/abr/hevc/llhls.m3u8"), master.status == 200 else { return false }
                    return master.bodyText.contains("CODECS=\"hvc1.") && master.bodyText.contains("RESOLUTION=640x360")
                }
                scenario.check(listed, "the LL-HLS master of the SRT HEVC stream does not list hvc1 at 640x360")
                if let report = try await scenario.probeLive("\(node.httpBase)/abr/hevc/src/llhls.m3u8", name: "probe-hevc-fmp4", seconds: 4) {
                    scenario.check(report.video?.codecName == "hevc" && report.video?.width == 640 && report.audio?.codecName == "aac",
                                   "LL-HLS of the SRT HEVC stream: \(String(describing: report.video)) \(String(describing: report.audio))")
                }
                try await scenario.waitUntilLive(node, "abr", "hevc_240p", timeout: .seconds(30))
                if let report = try await scenario.probeLive(node.flvURL("abr", "hevc_240p"), name: "probe-240p", seconds: 3) {
                    scenario.checkLivePlayback(report, "the 240p rung of the SRT HEVC stream", minVideoPackets: 30, width: 426)
                }
                try await EnhancedRTMPTests.checkStayed(scenario, viewer, "HTTP-FLV of the SRT HEVC stream", video: ["hevc"], width: 640, height: 360)
                let played = await player.finish(timeout: .seconds(15))
                scenario.check(played.succeeded, "ffmpeg playing HEVC over SRT: \(played)")
                try await Self.checkRecording(scenario, recording, "the SRT player's HEVC recording", videoCodec: "hevc")
                let (_, decoded) = try await scenario.decodeCheck(recording, name: "decode-srt-hevc")
                let frames = decoded?.video?.readFrames ?? 0
                scenario.note("the SRT player's HEVC recording: \(frames) frames decoded")
                scenario.check(frames >= 850, "the SRT player's HEVC recording decodes to \(frames) frames, expected 850+")
            }
        }

        @Test("An Opus publisher over SRT (ffmpeg, libopus in MPEG-TS): PyAV watches HTTP-FLV 30 s and decodes H.264 with Opus at 48 kHz, every frame, a keyframe first; LL-HLS names opus and ffprobe reads it; a viewer stays 30 s on the transcoder's 240p rung, whose audio is AAC")
        func opusPublishedOverSRT() async throws {
            try await Scenario.run("srt-opus") { scenario in
                let media = try await MediaLibrary.shared.file(.opusAudioVideo)
                let srtPort = try await FreePorts.allocate(1)[0]
                let node = try await scenario.startNode(label: "node", arguments: ["--srt-port", String(srtPort)])
                _ = try Self.publishOverSRT(scenario, media: media, port: srtPort, streamID: "publish:abr/opus", name: "srt-opus-publisher")
                try await scenario.waitUntilLive(node, "abr", "opus", timeout: .seconds(15))
                let python = try TestEnvironment.python3()
                let watcher = try EnhancedRTMPTests.peer("pyav_watch.py")
                let viewer = try scenario.launch(executable: python, [watcher, node.flvURL("abr", "opus"), "30"], name: "pyav-opus-viewer")
                try await scenario.waitUntilLive(node, "abr", "opus_240p", timeout: .seconds(30))
                let rung = try scenario.launch(executable: python, [watcher, node.flvURL("abr", "opus_240p"), "30"], name: "pyav-240p-viewer")

                let listed = await eventually(timeout: .seconds(20), interval: .milliseconds(250)) {
                    guard let master = try? await scenario.hlsGet(node, "/abr/opus/llhls.m3u8"), master.status == 200 else { return false }
                    return master.bodyText.contains("CODECS=\"avc1.") && master.bodyText.contains(",opus\"")
                }
                scenario.check(listed, "the LL-HLS master of the SRT Opus stream does not list H.264 + Opus")
                try await EnhancedRTMPTests.checkOpusOverLLHLS(scenario, node, "abr/opus", "the SRT Opus stream")
                try await EnhancedRTMPTests.checkStayed(scenario, viewer, "HTTP-FLV of the SRT Opus stream", width: 640, height: 360, audio: "opus")
                try await EnhancedRTMPTests.checkStayed(scenario, rung, "240p rung of the SRT Opus stream (AAC)", width: 426, height: 240)
            }
        }

        @Test("An SRT publisher (ffmpeg, MediaMTX's stream id) is watched 30 s over HTTP-FLV without a gap, with monotonic timestamps and audio beside video; RTMP, HLS and the transcoder's rungs play it; its session is listed as srt")
        func publishedOverSRTPlaysEverywhere() async throws {
            try await Scenario.run("srt-publish") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let srtPort = try await FreePorts.allocate(1)[0]
                let node = try await scenario.startNode(label: "node", arguments: ["--srt-port", String(srtPort), "--admin-token", SessionsTests.token])
                let publisher = try Self.publishOverSRT(scenario, media: media, port: srtPort, streamID: "publish:abr/cam", name: "srt-publisher")
                try await scenario.waitUntilLive(node, "abr", "cam", timeout: .seconds(15))
                let sessions = (try? await SessionsTests.sessions(node, "?kind=publish")) ?? []
                scenario.check(sessions.contains { $0["path"] as? String == "abr/cam" && $0["protocol"] as? String == "srt" },
                               "the SRT publisher is not listed as an srt session: \(sessions)")

                // The viewer that stays.
                let viewer = try await scenario.openViewer(node, "abr", "cam")
                try scenario.require(await viewer.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(10)), "the HTTP-FLV viewer got no media")
                let start = viewer.receivedBytes
                let watch = Task { try await longestWait(for: .seconds(30), every: .milliseconds(50), from: start) { viewer.receivedBytes } }

                // Meanwhile: RTMP, HLS, and the transcoder's 240p rung.
                if let report = try await scenario.probeLive(node.rtmpURL("abr", "cam"), name: "probe-rtmp", seconds: 3) {
                    scenario.checkLivePlayback(report, "RTMP play of the SRT stream", minVideoPackets: 45, width: 640)
                }
                try await scenario.waitUntilLive(node, "abr", "cam_240p", timeout: .seconds(20))
                if let report = try await scenario.probeLive(node.flvURL("abr", "cam_240p"), name: "probe-240p", seconds: 3) {
                    scenario.checkLivePlayback(report, "the 240p rung of the SRT stream", minVideoPackets: 30, width: 426)
                }
                // A viewer that stays on the rung too: a rung restarting under it would show here.
                let rungViewer = try await scenario.openViewer(node, "abr", "cam_240p")
                try scenario.require(await rungViewer.waitForProgress(beyond: 0, bytes: 5_000, timeout: .seconds(10)), "the 240p viewer got no media")
                let rungStart = rungViewer.receivedBytes
                let rungWatch = Task { try await longestWait(for: .seconds(30), every: .milliseconds(50), from: rungStart) { rungViewer.receivedBytes } }
                let listed = await eventually(timeout: .seconds(15), interval: .milliseconds(250)) {
                    guard let master = try? await scenario.hlsGet(node, "/abr/cam/index.m3u8"), master.status == 200 else { return false }
                    return master.bodyText.contains("240p/index.m3u8")
                }
                scenario.check(listed, "the HLS master of the SRT stream never listed its 240p rung")
                if let report = try await scenario.probeLive("\(node.httpBase)/abr/cam/llhls.m3u8", name: "probe-llhls", seconds: 3) {
                    scenario.check(report.video?.codecName == "h264" && report.audio?.codecName == "aac",
                                   "LL-HLS of the SRT stream: \(String(describing: report.video)) \(String(describing: report.audio))")
                }

                let flv = try Self.checkStayed(scenario, viewer, "the HTTP-FLV viewer", longestWait: try await watch.value, minVideoFrames: 750)
                scenario.check(flv.audioFrames.count >= 1000, "\(flv.audioFrames.count) audio frames in 30 s, expected 1000+ (44.1 kHz AAC)")
                // Audio and video stay together: their latest timestamps are within 300 ms.
                if let video = flv.videoFrames.last?.timestamp, let audio = flv.audioFrames.last?.timestamp {
                    let offset = abs(Int64(video) - Int64(audio))
                    scenario.note("A/V offset at the end: \(offset) ms")
                    scenario.check(offset < 300, "audio and video drifted apart: video at \(video) ms, audio at \(audio) ms")
                }
                _ = try Self.checkStayed(scenario, rungViewer, "the 240p viewer", longestWait: try await rungWatch.value, minVideoFrames: 700)
                scenario.check(publisher.isRunning, "ffmpeg stopped publishing: \(publisher.stderrText.suffix(400))")
                await viewer.close()
                await rungViewer.close()

                // A node that ran libsrt exits cleanly (two libsrt builds in one process once
                // crashed every such process at exit).
                node.terminate()
                let end = await node.process.waitForExit(timeout: .seconds(8))
                scenario.check(end == .exited(0), "the node after SIGTERM: \(end.map(\.description) ?? "still running after 8 s"), expected exit 0")
            }
        }

        @Test("A stream published over RTMP is watched 30 s over SRT by ffmpeg (MediaMTX's read:) and srt-live-transmit (SRS's m=request) from one shared TS feed: no stall, every frame, monotonic timestamps, audio beside video; both are srt play sessions")
        func rtmpStreamPlaysOverSRT() async throws {
            try await Scenario.run("srt-play") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let srtPort = try await FreePorts.allocate(1)[0]
                let node = try await scenario.startNode(label: "node", arguments: ["--srt-port", String(srtPort), "--admin-token", SessionsTests.token])
                _ = try scenario.publish(media, to: node.rtmpURL("live", "cam"), name: "rtmp-publisher", loop: true)
                try await scenario.waitUntilLive(node, "live", "cam", timeout: .seconds(15))

                // Two players that stay: ffmpeg records 32 s, srt-live-transmit writes to its stdout.
                let recording = scenario.file("srt-ffmpeg.ts")
                let ffmpeg = try Self.recordOverSRT(scenario, port: srtPort, streamID: "read:live/cam", into: recording, name: "ffmpeg-srt-viewer")
                let transmit = try scenario.launch(
                    "srt-live-transmit", ["-q", "srt://127.0.0.1:\(srtPort)?streamid=#!::r=live/cam,m=request", "file://con"], name: "srt-live-transmit-viewer"
                )
                func size(_ url: URL) -> Int { ((try? FileManager.default.attributesOfItem(atPath: url.path)[.size]) as? Int) ?? 0 }
                func srtPlayersNow() async -> [[String: Any]] {
                    ((try? await SessionsTests.sessions(node, "?kind=play")) ?? []).filter { $0["path"] as? String == "live/cam" && $0["protocol"] as? String == "srt" }
                }
                let started = await eventually(timeout: .seconds(10), interval: .milliseconds(100)) { size(recording) > 0 && size(transmit.stdoutURL) > 0 }
                try scenario.require(started, "the SRT players got nothing: ffmpeg \(size(recording)) bytes (\(ffmpeg.stderrText.suffix(300))), srt-live-transmit \(size(transmit.stdoutURL)) bytes (\(transmit.stderrText.suffix(300)))")
                // A third player that stops reading (SIGSTOP: its libsrt stops acknowledging too).
                let firstTwo = Set(await srtPlayersNow().compactMap { $0["id"] as? String })
                let stalled = try scenario.launch("srt-live-transmit", ["-q", "srt://127.0.0.1:\(srtPort)?streamid=read:live/cam", "file://con"], name: "srt-stalled-viewer")
                let three = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) { await srtPlayersNow().count == 3 && size(stalled.stdoutURL) > 0 }
                let listed = await srtPlayersNow()
                scenario.check(three, "the three SRT players are not listed as srt play sessions: \(listed)")
                let sending = await eventually(timeout: .seconds(5), interval: .milliseconds(250)) {
                    await srtPlayersNow().allSatisfy { (($0["link"] as? [String: Any])?["bitsPerSecond"] as? Double ?? 0) > 0 }
                }
                let entries = await srtPlayersNow()
                scenario.check(sending, "the SRT players' session entries lack their link statistics: \(entries)")
                let stalledID = listed.compactMap { $0["id"] as? String }.first { !firstTwo.contains($0) }
                let feeds = try await node.metrics().text.split(separator: "\n").first { $0.hasPrefix("estuary_srt_ts_feeds ") }
                scenario.check(feeds.flatMap { Double($0.split(separator: " ").last ?? "") } == 1, "three players of one stream should share one TS feed: \(feeds ?? "no estuary_srt_ts_feeds")")
                stalled.send(signal: SIGSTOP)
                let watchTransmit = Task { try await longestWait(for: .seconds(30), every: .milliseconds(100), from: 0) { size(transmit.stdoutURL) } }
                // srt-live-transmit writes what each SRT message brings: its output's growth is
                // the wire's. (ffmpeg's file grows in bursts of its own interleaving and
                // buffering; its recording's timeline is checked below instead.)
                let transmitGap = try await watchTransmit.value
                scenario.note("srt-live-transmit: the longest wait for bytes was \(transmitGap)")
                scenario.check(transmitGap < .milliseconds(500), "srt-live-transmit's output did not grow for \(transmitGap)")
                scenario.check(transmit.isRunning, "srt-live-transmit stopped: \(transmit.stderrText.suffix(400))")
                // The stalled player was dropped; it held back no one (the watch above).
                let remaining = await srtPlayersNow()
                scenario.check(stalledID != nil && !remaining.contains { $0["id"] as? String == stalledID }, "the stalled SRT player (\(stalledID ?? "?")) is still a session after 30 s: \(remaining)")
                scenario.check(node.log.contains("timed out") || node.log.contains("reason=left"), "the stalled player's end is not logged")
                stalled.send(signal: SIGKILL)
                let ended = await ffmpeg.finish(timeout: .seconds(15))
                scenario.check(ended.succeeded, "ffmpeg over SRT: \(ended)")
                // An operator's kick ends the one player left, srt-live-transmit's (on the
                // stream's sending thread, which learns of it at its next chunk).
                let left = await srtPlayersNow()
                let kickedID = try #require(left.count == 1 ? left[0]["id"] as? String : nil, "srt-live-transmit's should be the one SRT player left: \(left)")
                let kickStatus = try await SessionsTests.kick(node, kickedID)
                scenario.check((200..<300).contains(kickStatus), "DELETE of the SRT player's session answered \(kickStatus)")
                // (srt-live-transmit calls again at once: a new session, with an id of its own.)
                let kickedGone = await eventually(timeout: .seconds(3), interval: .milliseconds(100)) {
                    await !srtPlayersNow().contains { $0["id"] as? String == kickedID }
                }
                let stillListed = await srtPlayersNow()
                scenario.check(kickedGone, "the kicked SRT player \(kickedID) is still a session: \(stillListed)")
                scenario.check(node.log.contains("maintenance"), "the kick's reason is not in the node's log")

                // What ffmpeg recorded: H.264 and AAC, 30 s of frames, DTS forward, A/V together.
                try await Self.checkRecording(scenario, recording, "ffmpeg's SRT recording")
                transmit.send(signal: SIGINT)
                _ = await transmit.waitForExit(timeout: .seconds(5))
                let (decode, decoded) = try await scenario.decodeCheck(transmit.stdoutURL, name: "decode-srt-live-transmit")
                let frames = decoded?.video?.readFrames ?? 0
                scenario.note("srt-live-transmit: \(size(transmit.stdoutURL)) bytes, \(frames) video frames decoded")
                scenario.check(decode.succeeded && frames >= 850, "srt-live-transmit's output decodes to \(frames) video frames (expected 850+): \(decode)")
            }
        }

        @Test("Publishers and players have caps of their own (srtMaxPublishers, srtMaxPlayers): a caller past either is rejected with SRT code 1402, seen by the caller; players at their cap never lock an encoder out, and a freed slot is taken again")
        func publishersAndPlayersHaveTheirOwnCaps() async throws {
            try await Scenario.run("srt-caps") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let srtPort = try await FreePorts.allocate(1)[0]
                let node = try await scenario.startNode(
                    NodeConfig(srtMaxPublishers: 2, srtMaxPlayers: 1), label: "node", arguments: ["--srt-port", String(srtPort), "--admin-token", SessionsTests.token]
                )
                _ = try Self.publishOverSRT(scenario, media: media, port: srtPort, streamID: "publish:live/a", name: "srt-publisher-a")
                try await scenario.waitUntilLive(node, "live", "a", timeout: .seconds(15))
                // The one player slot, taken.
                let player = try scenario.launch("srt-live-transmit", ["-q", "srt://127.0.0.1:\(srtPort)?streamid=read:live/a", "file://con"], name: "srt-player")
                func srtSessions(_ kind: String) async -> Int {
                    ((try? await SessionsTests.sessions(node, "?kind=\(kind)")) ?? []).filter { $0["protocol"] as? String == "srt" }.count
                }
                try scenario.require(await eventually(timeout: .seconds(10), interval: .milliseconds(200)) { await srtSessions("play") == 1 }, "the first SRT player is not a session")
                let second = await SRTCaller.rejection(port: srtPort, streamID: "read:live/a")
                scenario.check(second == SRT_REJX_OVERLOAD, "a second player past srtMaxPlayers 1: rejection \(second), expected \(SRT_REJX_OVERLOAD)")
                // Players at their cap do not keep an encoder out: the second publisher goes live.
                _ = try Self.publishOverSRT(scenario, media: media, port: srtPort, streamID: "publish:live/b", name: "srt-publisher-b")
                try await scenario.waitUntilLive(node, "live", "b", timeout: .seconds(15))
                let third = await SRTCaller.rejection(port: srtPort, streamID: "publish:live/c")
                scenario.check(third == SRT_REJX_OVERLOAD, "a third publisher past srtMaxPublishers 2: rejection \(third), expected \(SRT_REJX_OVERLOAD)")
                scenario.check(await srtSessions("publish") == 2, "two SRT publishers should be sessions")
                scenario.check(node.log.contains("SRT players are connected, the most allowed") && node.log.contains("SRT publishers are connected, the most allowed"), "the cap rejections are not logged")
                let metrics = try await node.metrics().text
                scenario.check(metrics.contains("estuary_srt_connections_total{result=\"overload\"} 2"), "the two rejections are not counted: \(metrics.split(separator: "\n").filter { $0.contains("srt_connections") })")
                // The player leaves: its slot is free again.
                player.send(signal: SIGKILL)
                let freed = await eventually(timeout: .seconds(15), interval: .milliseconds(250)) { await srtSessions("play") == 0 }
                scenario.check(freed, "the killed SRT player is still a session")
                let again = await SRTCaller.rejection(port: srtPort, streamID: "read:live/a", hold: .seconds(1))
                scenario.check(again == 0, "a player after the first left: rejection \(again), expected to connect")
            }
        }

        @Test("One address holds no more SRT players than srtMaxCallersPerAddress: the next is rejected with 1402, seen by the caller, while another address still gets in")
        func oneAddressHoldsNoMoreThanItsShare() async throws {
            try await Scenario.run("srt-per-address") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let srtPort = try await FreePorts.allocate(1)[0]
                var config = NodeConfig()
                config.srtMaxCallersPerAddress = 2
                // The test's callers are on loopback, exempt by default (a local proxy).
                config.limitLoopbackConnections = true
                let node = try await scenario.startNode(config, label: "node", arguments: ["--srt-port", String(srtPort), "--admin-token", SessionsTests.token])
                _ = try Self.publishOverSRT(scenario, media: media, port: srtPort, streamID: "publish:live/a", name: "srt-publisher")
                try await scenario.waitUntilLive(node, "live", "a", timeout: .seconds(15))
                func srtPlayers() async -> Int {
                    ((try? await SessionsTests.sessions(node, "?kind=play")) ?? []).filter { $0["protocol"] as? String == "srt" }.count
                }
                // Two players from 127.0.0.1 stay 8 s; the publisher from there is counted apart.
                async let first = SRTCaller.rejection(port: srtPort, streamID: "read:live/a", hold: .seconds(8))
                async let second = SRTCaller.rejection(port: srtPort, streamID: "read:live/a", hold: .seconds(8))
                try scenario.require(await eventually(timeout: .seconds(6), interval: .milliseconds(200)) { await srtPlayers() == 2 }, "the two SRT players are not sessions")
                let third = await SRTCaller.rejection(port: srtPort, streamID: "read:live/a")
                scenario.check(third == SRT_REJX_OVERLOAD, "a third player from one address past srtMaxCallersPerAddress 2: rejection \(third), expected \(SRT_REJX_OVERLOAD)")
                let other = await SRTCaller.rejection(port: srtPort, streamID: "read:live/a", from: "127.0.0.2", hold: .seconds(1))
                scenario.check(other == 0, "a player from another address: rejection \(other), expected to connect")
                let held = await (first, second)
                scenario.check(held.0 == 0 && held.1 == 0, "the two players within the cap were rejected: \(held)")
                scenario.check(node.log.contains("are connected from this address, the most allowed"), "the rejection is not logged")
                let metrics = try await node.metrics()
                scenario.check(metrics.sum("estuary_srt_connections_total", labels: ["result": "address_limit"]) == 1, "the rejection is not counted: \(metrics.describe("estuary_srt_connections_total"))")
            }
        }

        @Test("SRS's stream id with a stream key: the key is checked by the same admission as RTMP's; a missing or wrong key is rejected with code 1401 in the first handshake (the coordinator asked within it), seen by libsrt's caller and ffmpeg; a hook's refusal closes the first attempt and is rejected with 1401 when it comes again, the hook asked once; a stream id that does not parse is rejected with SRT code 1400")
        func streamIDsAndKeys() async throws {
            try await Scenario.run("srt-refusals") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let srtPort = try await FreePorts.allocate(1)[0]
                let hooks = try await WebhookTests.HookServer.start(scenario, slowSeconds: 1)
                var config = NodeConfig(requireStreamKeys: true)
                // A wait with room for a loaded machine (the default is a quarter of the latency).
                config.srtHandshakeWaitMilliseconds = 100
                config.hooks = ["closed": .init(onPublish: NodeConfig.Hook(url: hooks.url("/refuse/publish")))]
                let node = try await scenario.startNode(config, label: "node", arguments: ["--srt-port", String(srtPort), "--admin-token", SessionsTests.token])
                func createKey(_ app: String, _ name: String) async throws -> String {
                    let created = try await HTTPClient.request(
                        "POST", port: node.adminPort, path: "/api/v1/keys", headers: ["Authorization": "Bearer \(SessionsTests.token)"],
                        body: #"{"app":"\#(app)","name":"\#(name)"}"#
                    )
                    let json = (try? JSONSerialization.jsonObject(with: Data(created.bodyText.utf8)) as? [String: Any]) ?? [:]
                    return try #require(json["key"] as? String, "creating a key answered \(created.status): \(created.bodyText)")
                }
                let key = try await createKey("live", "keyed")
                let closedKey = try await createKey("closed", "cam")

                // A stream id that names no stream: rejected in the handshake, code 1400.
                for bad in ["nonsense", "publish:live", "#!::m=publish", "#!::r=live/cam,m=upload"] {
                    let code = await SRTCaller.rejection(port: srtPort, streamID: bad)
                    scenario.check(code == SRT_REJX_BAD_REQUEST, "stream id '\(bad)': rejection \(code), expected \(SRT_REJX_BAD_REQUEST)")
                }
                // A player of a stream that is not live: rejected in the handshake, code 1404.
                for play in ["read:live/keyed", "#!::r=live/keyed,m=request", "live/keyed"] {
                    let code = await SRTCaller.rejection(port: srtPort, streamID: play)
                    scenario.check(code == SRT_REJX_NOTFOUND, "stream id '\(play)': rejection \(code), expected \(SRT_REJX_NOTFOUND)")
                }
                let refused = try await Self.publishTwoSeconds(scenario, port: srtPort, streamID: "nonsense", name: "ffmpeg-bad-streamid")
                scenario.check(!refused.succeeded && refused.stderr.contains("reject"), "ffmpeg with a bad stream id: \(refused)")

                // No key at all: the admission refuses it without waiting, so even the first
                // attempt is rejected in the handshake, 1401 (libsrt's caller and ffmpeg).
                let keyless = await SRTCaller.rejection(port: srtPort, streamID: "#!::r=live/keyless,m=publish")
                scenario.check(keyless == SRT_REJX_UNAUTHORIZED, "a first publish without a key: rejection \(keyless), expected \(SRT_REJX_UNAUTHORIZED)")
                let ffmpegKeyless = try await Self.publishTwoSeconds(scenario, port: srtPort, streamID: "publish:live/keyless2", name: "ffmpeg-keyless")
                scenario.check(!ffmpegKeyless.succeeded && ffmpegKeyless.stderr.contains("reject"), "ffmpeg's first publish without a key: \(ffmpegKeyless)")
                scenario.check(node.log.contains("its publish of live/keyless is refused: a stream key is required"), "the keyless rejection in the handshake is not logged with its reason")

                // The wrong key: the coordinator (embedded here) refuses it, asked within the
                // handshake's wait, so even the first attempt is rejected with 1401, seen by
                // libsrt's caller and by ffmpeg (another wrong key, its first attempt too).
                let wrong = await SRTCaller.rejection(port: srtPort, streamID: "#!::r=live/keyed,m=publish,key=wrong")
                scenario.check(wrong == SRT_REJX_UNAUTHORIZED, "a first publish with a wrong key: rejection \(wrong), expected \(SRT_REJX_UNAUTHORIZED)")
                let ffmpegWrong = try await Self.publishTwoSeconds(scenario, port: srtPort, streamID: "%23!::r=live/keyed,m=publish,key=other", name: "ffmpeg-wrong-key")
                scenario.check(!ffmpegWrong.succeeded && ffmpegWrong.stderr.contains("reject"), "ffmpeg's first publish with a wrong key: \(ffmpegWrong)")
                scenario.check(node.log.contains("its publish of live/keyed is refused: stream key refused"), "the wrong key's rejection in the handshake is not logged with its reason")
                let notLive = try await HTTPClient.get(port: node.httpPort, path: "/live/keyed.flv", timeout: .seconds(2))
                scenario.check(notLive.status == 404, "a publisher with the wrong key made the stream live: \(notLive.status)")
                // The same request again, within the refusal memory (10 s): rejected with 1401
                // without asking the admission again.
                let again = await SRTCaller.rejection(port: srtPort, streamID: "#!::r=live/keyed,m=publish,key=wrong")
                scenario.check(again == SRT_REJX_UNAUTHORIZED, "the wrong key again: rejection \(again), expected \(SRT_REJX_UNAUTHORIZED)")
                scenario.check(node.log.contains("rejected (1401)") && node.log.contains("was refused moments ago"), "the remembered rejection is not logged")

                // A hook is told of each attempt, so the handshake does not ask it: with the
                // right key, a publish the hook refuses connects and is closed; the same request
                // again is rejected in the handshake from the refusal memory, and the hook was
                // asked once.
                let hookFirst = await SRTCaller.rejection(port: srtPort, streamID: "#!::r=closed/cam,m=publish,key=\(closedKey)", hold: .seconds(1))
                scenario.check(hookFirst == 0, "a publish the hook refuses was rejected in the handshake (\(hookFirst)): the hook is not asked there")
                let hookRefused = await eventually(timeout: .seconds(5), interval: .milliseconds(100)) {
                    node.log.contains("SRT publish of closed/cam") && node.log.contains("refused")
                }
                scenario.check(hookRefused, "the hook's refusal after the handshake is not logged")
                let hookAgain = await SRTCaller.rejection(port: srtPort, streamID: "#!::r=closed/cam,m=publish,key=\(closedKey)")
                scenario.check(hookAgain == SRT_REJX_UNAUTHORIZED, "the hook's refusal again: rejection \(hookAgain), expected \(SRT_REJX_UNAUTHORIZED)")
                let told = hooks.bodies("/refuse/publish").count
                scenario.check(told == 1, "the hook was asked \(told) times for two attempts, one remembered")

                // The right key, in SRS's form.
                _ = try Self.publishOverSRT(scenario, media: media, port: srtPort, streamID: "#!::r=live/keyed,m=publish,key=\(key)", name: "right-key")
                try await scenario.waitUntilLive(node, "live", "keyed", timeout: .seconds(15))
                if let report = try await scenario.probeLive(node.rtmpURL("live", "keyed"), name: "probe-keyed", seconds: 2) {
                    scenario.checkLivePlayback(report, "the keyed SRT stream", minVideoPackets: 30)
                }
                let metrics = try await node.metrics()
                scenario.check(metrics.text.contains("estuary_srt_connections_total{result=\"bad_streamid\"}"), "no SRT rejection metric")
                scenario.check(metrics.sum("estuary_srt_connections_total", labels: ["result": "refused_again"]) >= 2, "the rejections of the remembered refusal are not counted: \(metrics.describe("estuary_srt_connections_total"))")
                // Two keyless and two wrong keys (a retransmitted handshake may add one).
                scenario.check(metrics.sum("estuary_srt_connections_total", labels: ["result": "refused_in_handshake"]) >= 4, "the rejections in the handshake are not counted: \(metrics.describe("estuary_srt_connections_total"))")
                scenario.check(metrics.sum("estuary_srt_handshake_waits_total", labels: ["result": "answered"]) >= 3, "the handshake's waits for the coordinator are not counted: \(metrics.describe("estuary_srt_handshake_waits_total"))")
                scenario.check(metrics.sum("estuary_publishes_refused_total", labels: ["reason": "stream_key"]) >= 3, "the key refusals are not counted with RTMP's: \(metrics.describe("estuary_publishes_refused_total"))")

            }
        }

        @Test("Tokens in the stream id (SRS's token= and expires=): an HMAC token publishes and a viewer holding a play token stays 30 s; a missing token, a tampered one, or one for the other action is rejected in the first handshake with 1401, seen by the caller and ffmpeg, logged and counted with RTMP's refusals; so is a bad JWT, verified within the handshake's wait, and a viewer with a good one stays 30 s beside the HMAC one")
        func tokens() async throws {
            try await Scenario.run("srt-tokens") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let srtPort = try await FreePorts.allocate(1)[0]
                let config = scenario.file("tokens.json")
                let settings: [String: Any] = [
                    "tokens": ["live": ["hmacSecret": TokenTests.hmacSecret, "jwtSecret": TokenTests.jwtSecret]],
                    "adminToken": SessionsTests.token,
                    // A wait with room for a loaded machine (the default is a quarter of the latency).
                    "srtHandshakeWaitMilliseconds": 100,
                ]
                try JSONSerialization.data(withJSONObject: settings).write(to: config)
                let node = try await scenario.startNode(label: "node", arguments: ["--srt-port", String(srtPort), "--config", config.path])
                let expires = Int(Date().timeIntervalSince1970) + 600
                func hmac(_ action: String, _ stream: String) async throws -> String {
                    let token = try await TokenTests.issue(scenario, ["hmac", "--secret", TokenTests.hmacSecret, "--action", action, "--stream", stream, "--expires", String(expires)])
                    return "token=\(token),expires=\(expires)"
                }

                // Publishing: without a token, with a tampered one, with a play token: each
                // rejected in its first handshake.
                let tampered = "token=\(String(repeating: "0", count: 64)),expires=\(expires)"
                for (parameters, what) in [("", "no token"), (",\(tampered)", "a tampered HMAC token"), (",\(try await hmac("play", "live/tok"))", "a play token")] {
                    let code = await SRTCaller.rejection(port: srtPort, streamID: "#!::r=live/tok,m=publish\(parameters)")
                    scenario.check(code == SRT_REJX_UNAUTHORIZED, "a first publish with \(what): rejection \(code), expected \(SRT_REJX_UNAUTHORIZED)")
                }
                let publishToken = try await hmac("publish", "live/tok")
                _ = try Self.publishOverSRT(scenario, media: media, port: srtPort, streamID: "%23!::r=live/tok,m=publish,\(publishToken)", name: "publisher")
                // (Live as the session table says: HTTP-FLV would need a play token too.)
                let live = await eventually(timeout: .seconds(15), interval: .milliseconds(200)) {
                    ((try? await SessionsTests.sessions(node, "?kind=publish")) ?? []).contains { $0["path"] as? String == "live/tok" }
                }
                try scenario.require(live, "the SRT publisher with an HMAC token is not publishing")

                // Playing: the same three mistakes, rejected in the first handshake; ffmpeg sees it.
                for (parameters, what) in [("", "no token"), (",\(tampered)", "a tampered HMAC token"), (",\(publishToken)", "a publish token")] {
                    let code = await SRTCaller.rejection(port: srtPort, streamID: "#!::r=live/tok,m=request\(parameters)")
                    scenario.check(code == SRT_REJX_UNAUTHORIZED, "a first play with \(what): rejection \(code), expected \(SRT_REJX_UNAUTHORIZED)")
                }
                let ffmpegBare = try await scenario.run(
                    "ffmpeg", ["-nostdin", "-hide_banner", "-i", "srt://127.0.0.1:\(srtPort)?streamid=read:live/tok", "-t", "1", "-f", "null", "-"],
                    name: "ffmpeg-play-without-token", timeout: .seconds(20)
                )
                scenario.check(!ffmpegBare.succeeded && ffmpegBare.stderr.contains("reject"), "ffmpeg playing without a token: \(ffmpegBare)")
                scenario.check(node.log.contains("its play of live/tok is refused: token: no token"), "the rejection is not logged with its reason")

                // A JWT is verified within the handshake's wait: a bad one is rejected with 1401
                // on its first attempt (and again, from the refusal memory); a good one plays.
                let badJWT = try await TokenTests.issue(scenario, ["jwt", "--dir", scenario.directory.path, "--alg", "HS256", "--secret", String(repeating: "x", count: 40), "--claims", #"{"exp": \#(expires)}"#])
                let firstJWT = await SRTCaller.rejection(port: srtPort, streamID: "#!::r=live/tok,m=request,token=\(badJWT)")
                scenario.check(firstJWT == SRT_REJX_UNAUTHORIZED, "a bad JWT's first play: rejection \(firstJWT), expected \(SRT_REJX_UNAUTHORIZED)")
                let againJWT = await SRTCaller.rejection(port: srtPort, streamID: "#!::r=live/tok,m=request,token=\(badJWT)")
                scenario.check(againJWT == SRT_REJX_UNAUTHORIZED, "the bad JWT again: rejection \(againJWT), expected \(SRT_REJX_UNAUTHORIZED)")
                let goodJWT = try await TokenTests.issue(scenario, ["jwt", "--dir", scenario.directory.path, "--alg", "HS256", "--secret", TokenTests.jwtSecret, "--claims", #"{"exp": \#(expires), "actions": ["play"]}"#])
                let goodPlay = await SRTCaller.rejection(port: srtPort, streamID: "#!::r=live/tok,m=request,token=\(goodJWT)", hold: .seconds(1))
                scenario.check(goodPlay == 0, "a good JWT's play was rejected in the handshake (\(goodPlay))")

                // A viewer with its HMAC play token, and one with its JWT (admitted through the
                // handshake's wait), stay 30 s side by side.
                let playToken = try await hmac("play", "live/tok")
                let recording = scenario.file("srt-token.ts")
                let viewer = try Self.recordOverSRT(scenario, port: srtPort, streamID: "%23!::r=live/tok,m=request,\(playToken)", into: recording, name: "srt-viewer")
                let jwtRecording = scenario.file("srt-jwt.ts")
                let jwtViewer = try Self.recordOverSRT(scenario, port: srtPort, streamID: "%23!::r=live/tok,m=request,token=\(goodJWT)", into: jwtRecording, name: "srt-jwt-viewer")
                _ = await viewer.waitForExit(timeout: .seconds(60))
                _ = await jwtViewer.waitForExit(timeout: .seconds(30))
                try await Self.checkRecording(scenario, recording, "the token holder's SRT recording")
                try await Self.checkRecording(scenario, jwtRecording, "the JWT holder's SRT recording")

                let metrics = try await node.metrics()
                // Seven by the admission in the handshake (the bad JWT's first attempt among
                // them); ffmpeg's bare play and the bad JWT's second attempt by the refusal memory.
                let connections = metrics.describe("estuary_srt_connections_total")
                scenario.check(metrics.sum("estuary_srt_connections_total", labels: ["result": "refused_in_handshake"]) >= 7, "the rejections in the handshake are not counted: \(connections)")
                scenario.check(metrics.sum("estuary_srt_connections_total", labels: ["result": "refused_again"]) >= 2, "the remembered rejections are not counted: \(connections)")
                scenario.check(metrics.sum("estuary_publishes_refused_total", labels: ["reason": "token"]) == 3, "the publish refusals are not counted with RTMP's: \(metrics.describe("estuary_publishes_refused_total"))")
                scenario.check(metrics.sum("estuary_plays_refused_total", labels: ["reason": "token"]) == 4, "the play refusals are not counted with RTMP's: \(metrics.describe("estuary_plays_refused_total"))")
            }
        }

        @Test("With a passphrase, ffmpeg publishing with it (AES-256) plays, and callers without it or with another are rejected in the handshake; the session's SRT link (RTT, rate, loss) is in /metrics; a silent caller is dropped after the idle timeout")
        func passphrase() async throws {
            try await Scenario.run("srt-passphrase") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let srtPort = try await FreePorts.allocate(1)[0]
                let file = scenario.file("estuary.yaml")
                let secret = "correct-horse-battery"
                try Data("srtPassphrase: \"\(secret)\"\n".utf8).write(to: file)
                let node = try await scenario.startNode(label: "node", arguments: ["--srt-port", String(srtPort), "--config", file.path])
                let url = "srt://127.0.0.1:\(srtPort)?streamid=publish:live/enc&passphrase=\(secret)&pbkeylen=32&latency=120000"
                _ = try scenario.launch(
                    "ffmpeg",
                    ["-nostdin", "-hide_banner", "-loglevel", "warning", "-stream_loop", "-1", "-re", "-i", media.url.path, "-c", "copy", "-f", "mpegts", url],
                    name: "encrypted-publisher"
                )
                try await scenario.waitUntilLive(node, "live", "enc", timeout: .seconds(15))
                if let report = try await scenario.probeLive(node.rtmpURL("live", "enc"), name: "probe-enc", seconds: 3) {
                    scenario.checkLivePlayback(report, "the encrypted SRT stream", minVideoPackets: 45)
                }
                let wrong = await SRTCaller.rejection(port: srtPort, streamID: "publish:live/other", passphrase: "not-the-passphrase")
                scenario.check(wrong == Int32(SRT_REJ_BADSECRET.rawValue), "a wrong passphrase: rejection \(wrong), expected BADSECRET (\(SRT_REJ_BADSECRET.rawValue))")
                let none = await SRTCaller.rejection(port: srtPort, streamID: "publish:live/other")
                scenario.check(none != 0, "a caller without the passphrase connected")
                let sampled = await eventually(timeout: .seconds(5), interval: .milliseconds(500)) {
                    let text = (try? await node.metrics())?.text ?? ""
                    return text.contains("estuary_srt_rtt_seconds{stream=\"live/enc\"}") && text.contains("estuary_srt_receive_bits_per_second{stream=\"live/enc\"}")
                }
                scenario.check(sampled, "the SRT session's link statistics are not in /metrics")

                // A caller that connects and sends nothing is dropped after the idle timeout (5 s).
                let silent = await SRTCaller.rejection(port: srtPort, streamID: "publish:live/silent", passphrase: secret, hold: .seconds(8))
                scenario.check(silent == 0, "the silent caller was rejected (\(silent)) instead of admitted")
                scenario.check(node.log.contains("no MPEG-TS within the idle timeout"), "the silent SRT caller was not ended by the idle timeout")
            }
        }

        @Test("Through a UDP proxy that drops 5 % of the datagrams each way at 50 ms RTT, an SRT publisher at 200 ms latency is watched 30 s without a gap: SRT's retransmissions (counted in /metrics) hide the loss")
        func lossyLink() async throws {
            try await Scenario.run("srt-loss") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let ports = try await FreePorts.allocate(2)
                let (srtPort, proxyPort) = (ports[0], ports[1])
                let file = scenario.file("estuary.yaml")
                try Data("srtLatencyMilliseconds: 200\n".utf8).write(to: file)
                let node = try await scenario.startNode(label: "node", arguments: ["--srt-port", String(srtPort), "--config", file.path, "--admin-token", SessionsTests.token])
                guard let root = TestEnvironment.repositoryRoot else { throw IntegrationFailure("the repository is not found") }
                let proxy = try scenario.launch(
                    executable: try TestEnvironment.python3(),
                    [root.appendingPathComponent("Tests/Peers/lossy_udp_proxy.py").path, "--listen", "127.0.0.1:\(proxyPort)",
                     "--connect", "127.0.0.1:\(srtPort)", "--delay-ms", "25", "--loss", "0.05"],
                    name: "lossy-proxy"
                )
                let ready = await eventually(timeout: .seconds(5), interval: .milliseconds(100)) { proxy.stdoutText.contains("listening") }
                try scenario.require(ready, "the UDP proxy did not start: \(proxy.stderrText)")
                _ = try Self.publishOverSRT(scenario, media: media, port: proxyPort, streamID: "publish:live/lossy", name: "lossy-publisher")
                try await scenario.waitUntilLive(node, "live", "lossy", timeout: .seconds(20))

                let viewer = try await scenario.openViewer(node, "live", "lossy")
                try scenario.require(await viewer.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(10)), "the viewer got no media")
                let start = viewer.receivedBytes
                let gap = try await longestWait(for: .seconds(30), every: .milliseconds(50), from: start) { viewer.receivedBytes }
                scenario.check(gap < .milliseconds(500), "the viewer of the lossy SRT stream saw nothing for \(gap)")
                let flv = try viewer.flv()
                scenario.check(flv.error == nil && flv.timestampRegressions().isEmpty, "the viewer's FLV: \(flv.error ?? "") regressions \(flv.timestampRegressions().prefix(3))")
                scenario.check(flv.videoFrames.count >= 750, "\(flv.videoFrames.count) video frames in 30 s through the lossy link, expected 750+")

                // The loss was real, and SRT repaired it.
                let metrics = try await node.metrics().text
                func value(_ name: String) -> Double {
                    metrics.split(separator: "\n").first { $0.hasPrefix("\(name){stream=\"live/lossy\"}") }
                        .flatMap { $0.split(separator: " ").last.flatMap { Double($0) } } ?? 0
                }
                let lost = value("estuary_srt_packets_lost_total"), retransmitted = value("estuary_srt_packets_retransmitted_total")
                scenario.note("SRT link: \(lost) packets lost, \(retransmitted) retransmitted, RTT \(value("estuary_srt_rtt_seconds")) s")
                scenario.check(lost > 0 && retransmitted > 0, "no loss or no retransmission seen: lost \(lost), retransmitted \(retransmitted)")
                // The same on the publisher's session entry in the admin API.
                let publishers = (try? await SessionsTests.sessions(node, "?kind=publish")) ?? []
                let link = publishers.first { $0["path"] as? String == "live/lossy" }?["link"] as? [String: Any]
                let rtt = link?["rttSeconds"] as? Double ?? 0, entryLost = link?["packetsLost"] as? Int ?? 0
                scenario.note("the publisher's session entry: link \(link.map { "\($0)" } ?? "none")")
                scenario.check(rtt > 0.03 && entryLost > 0 && (link?["packetsRetransmitted"] as? Int ?? 0) > 0 && (link?["bitsPerSecond"] as? Double ?? 0) > 0,
                               "the SRT publisher's session entry lacks its link statistics: \(publishers)")
                _ = await proxy.stop()
                scenario.note("proxy: \(proxy.stdoutText.split(separator: "\n").last ?? "")")
                await viewer.close()
            }
        }
    }
}

/// An SRT caller made with libsrt itself, for what ffmpeg does not print: the rejection code
/// the listener sent. libsrt's connect blocks, so it runs on a thread of its own.
enum SRTCaller {
    /// The rejection reason of a connection attempt with `streamID`; 0 if it connected (and
    /// then, with `hold`, stayed connected that long without sending anything).
    static func rejection(port: Int, streamID: String, passphrase: String? = nil, from source: String? = nil, hold: Duration = .zero) async -> Int32 {
        await withCheckedContinuation { continuation in
            let thread = Thread {
                srt_startup()
                let socket = srt_create_socket()
                _ = streamID.withCString { srt_setsockflag(socket, SRTO_STREAMID, $0, Int32(strlen($0))) }
                if let passphrase {
                    _ = passphrase.withCString { srt_setsockflag(socket, SRTO_PASSPHRASE, $0, Int32(strlen($0))) }
                }
                if let source {
                    // From another loopback address (a host of its own, for per-address caps).
                    var local = sockaddr_in()
                    local.sin_family = sa_family_t(AF_INET)
                    inet_pton(AF_INET, source, &local.sin_addr)
                    _ = withUnsafePointer(to: &local) { pointer in
                        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { srt_bind(socket, $0, Int32(MemoryLayout<sockaddr_in>.size)) }
                    }
                }
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = in_port_t(UInt16(port).bigEndian)
                inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
                let connected = withUnsafePointer(to: &address) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { srt_connect(socket, $0, Int32(MemoryLayout<sockaddr_in>.size)) }
                }
                let reason = connected == -1 ? srt_getrejectreason(socket) : 0
                if connected != -1, hold > .zero { Thread.sleep(forTimeInterval: Double(hold.components.seconds)) }
                srt_close(socket)
                continuation.resume(returning: reason)
            }
            thread.start()
        }
    }
}
