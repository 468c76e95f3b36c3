import CSRT
import Foundation
import TestSupport
import NIOCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension IntegrationTests {
    /// A cluster as separate processes: a real nats-server, an ingest node and relays.
    @Suite("Cluster over NATS")
    struct ClusterTests {
        /// nats-server, an ingest and `relays` relays, all on loopback.
        static func startCluster(_ scenario: Scenario, relays: Int) async throws -> (NATSServerProcess, NodeProcess, [NodeProcess]) {
            let nats = try await NATSServerProcess.start(scenario)
            let ingest = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1), label: "ingest", arguments: ["--role", "ingest", "--nats", nats.url, "--node-id", "ingest-1"])
            var relayNodes: [NodeProcess] = []
            for index in 1...relays {
                relayNodes.append(try await scenario.startNode(NodeConfig(), label: "relay\(index)", arguments: ["--role", "relay", "--nats", nats.url, "--node-id", "relay-\(index)"]))
            }
            return (nats, ingest, relayNodes)
        }

        @Test("A stream published to the ingest plays from both relays over HTTP-FLV, RTMP and HLS; a relay subscribes only while watched")
        func ingestToRelays() async throws {
            try await Scenario.run("cluster-relays") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let (nats, ingest, relays) = try await Self.startCluster(scenario, relays: 2)
                _ = try scenario.publish(media, to: ingest.rtmpURL("live", "cam"), name: "publisher")
                try await scenario.waitUntilLive(ingest, "live", "cam")
                // Nobody watches on the relays yet: no media subscription.
                let idle = try await nats.subscriptions(of: "relay-1") ?? []
                scenario.check(!idle.contains { $0.hasPrefix("media.") }, "relay-1 subscribes to media before any viewer: \(idle)")

                async let flv = scenario.probe(relays[0].flvURL("live", "cam"), name: "relay1-flv", timeout: .seconds(30))
                async let rtmp = scenario.probe(relays[1].rtmpURL("live", "cam"), name: "relay2-rtmp", timeout: .seconds(30))
                let subscribed = await eventually(timeout: .seconds(5), interval: .milliseconds(100)) {
                    (try? await nats.subscriptions(of: "relay-1"))??.contains("media.live.cam.src") == true
                }
                scenario.check(subscribed, "relay-1 did not subscribe to media.live.cam.src while watched")
                let playlist = try await scenario.waitForSegments(relays[1], "/live/cam", count: 1, timeout: .seconds(15))
                scenario.check(!playlist.segments.isEmpty, "relay-2 has no HLS segments")
                if let master = try? await scenario.hlsGet(relays[1], "/live/cam/index.m3u8") {
                    scenario.check(master.status == 200 && master.bodyText.contains("RESOLUTION=640x360"), "relay-2 master playlist: \(master.status) \(master.bodyText)")
                }

                for (label, report) in [("relay-1 HTTP-FLV", try await flv), ("relay-2 RTMP", try await rtmp)] {
                    guard let report else { continue }
                    scenario.check(report.video?.codecName == "h264" && report.video?.width == 640 && report.video?.height == 360,
                                   "\(label): video \(report.video?.codecName ?? "none") \(report.video?.width ?? 0)x\(report.video?.height ?? 0)")
                    scenario.check(report.audio?.codecName == "aac" && report.audio?.sampleRate == "44100", "\(label): audio \(report.audio?.codecName ?? "none")")
                    let video = report.packets(of: report.video)
                    scenario.check(video.first?.isKeyframe == true, "\(label): the first frame is not a keyframe (the GOP fetch failed)")
                    scenario.check(video.count >= Int(Double(media.videoFrames) * 0.5), "\(label): \(video.count) of \(media.videoFrames) video frames")
                    scenario.check(report.dtsRegressions(of: report.video).isEmpty && report.dtsRegressions(of: report.audio).isEmpty, "\(label): timestamps went backwards")
                    scenario.note("\(label): \(video.count) video frames")
                }
                // The stream ended (the viewers saw its end); the relays let go of the subject.
                let released = await eventually(timeout: .seconds(10), interval: .milliseconds(250)) {
                    guard let subscriptions = try? await nats.subscriptions(of: "relay-1") else { return false }
                    return !subscriptions.contains { $0.hasPrefix("media.") || $0.hasPrefix("end.") }
                }
                let remaining = (try? await nats.subscriptions(of: "relay-1")) ?? nil
                scenario.check(released, "relay-1 still subscribes after the stream ended: \(remaining ?? [])")
                let unknown = try await HTTPClient.get(port: relays[0].httpPort, path: "/live/nothing.flv", timeout: .seconds(5))
                scenario.check(unknown.status == 404, "an unknown stream on a relay answered \(unknown.status)")
            }
        }

        /// Issue 26: an encoder-made ladder (Enhanced RTMP multitrack) in a cluster: the ingest
        /// puts every track on the bus and reports them; the coordinator's lookup names them,
        /// and a relay lists and serves them as it does a transcoder's rungs.
        @Test("A multitrack publisher's tracks play from a relay: its HLS masters list the three at their resolutions and the second audio track as alternate audio, and viewers stay 30 s on each (HTTP-FLV, RTMP, LL-HLS), each at its own size with audio, and on the second audio track at its own pitch")
        func multitrackTracksOnARelay() async throws {
            try await Scenario.run("cluster-multitrack") { scenario in
                let media = try await MediaLibrary.shared.file(.multitrackAudioVideo)
                let nats = try await NATSServerProcess.start(scenario)
                let bus = ["--nats", nats.url]
                let coordinator = try await scenario.startNode(NodeConfig(), label: "coordinator", arguments: ["--role", "coordinator", "--node-id", "coordinator", "--admin-token", "test-admin-token"] + bus)
                let ingest = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1), label: "ingest", arguments: ["--role", "ingest", "--node-id", "ingest-1"] + bus)
                let relay = try await scenario.startNode(NodeConfig(), label: "relay", arguments: ["--role", "relay", "--node-id", "relay-1"] + bus)
                let python = try TestEnvironment.python3()
                let publisher = try scenario.launch(
                    executable: python, [try EnhancedRTMPTests.peer("pyav_publish.py"), media.url.path, ingest.rtmpURL("live", "mt")], name: "pyav-multitrack-publisher"
                )
                try await scenario.waitUntilLive(ingest, "live", "mt/track1", timeout: .seconds(20))
                try await scenario.waitUntilLive(ingest, "live", "mt/track2", timeout: .seconds(10))

                // The relay learns of the tracks from the coordinator (the ingest's heartbeat).
                await EnhancedRTMPTests.checkMastersListTracks(scenario, relay, "live/mt", "the relay")
                await EnhancedRTMPTests.checkMastersListAlternateAudio(scenario, relay, "live/mt", "the relay")
                // The operator sees them on the stream's entry.
                let (_, json) = try await coordinator.admin("/api/v1/streams", token: "test-admin-token")
                let stream = (json["streams"] as? [[String: Any]])?.first { $0["name"] as? String == "mt" }
                let tracks = (stream?["facts"] as? [String: Any])?["tracks"] as? [String]
                scenario.check(tracks == ["audio1", "track1", "track2"], "GET /api/v1/streams: the multitrack stream's tracks are \(String(describing: tracks)): \(String(describing: stream))")
                let watcher = try EnhancedRTMPTests.peer("pyav_watch.py")
                let viewers = [
                    ("the relay's track 0 (HTTP-FLV)", 640, 360, 0.5, try scenario.launch(executable: python, [watcher, relay.flvURL("live", "mt"), "30"], name: "relay-track0")),
                    ("the relay's track 1 (RTMP)", 426, 240, 0.5, try scenario.launch(executable: python, [watcher, relay.rtmpURL("live", "mt/track1"), "30"], name: "relay-track1")),
                    ("the relay's track 2 (LL-HLS)", 320, 180, EnhancedRTMPTests.hlsMaxWait,
                     try scenario.launch(executable: python, [watcher, "\(relay.httpBase)/live/mt/track2/llhls.m3u8", "30"], name: "relay-track2-hls")),
                ]
                let secondAudio = try scenario.launch(executable: python, [watcher, relay.flvURL("live", "mt/audio1"), "30"], name: "relay-audio1")
                for (label, width, height, maxWait, viewer) in viewers {
                    try await EnhancedRTMPTests.checkStayed(scenario, viewer, label, width: width, height: height, maxWait: maxWait)
                }
                try await EnhancedRTMPTests.checkSecondAudioStayed(scenario, secondAudio, "the relay's audio track 1 (HTTP-FLV)")
                scenario.check(publisher.isRunning, "the multitrack publisher was disconnected")
            }
        }

        @Test("A multitrack encoder that loses its ingest and comes back on another (its backup URL) keeps the relay's viewers: the main rendition, a video track and the second audio track, watched over HTTP-FLV from before the move, stay open for 30 s after it, their timestamps forward and the tracks on the main rendition's timeline")
        func multitrackPublisherMovesToAnotherIngest() async throws {
            try await Scenario.run("cluster-multitrack-ingest-move") { scenario in
                let media = try await MediaLibrary.shared.file(.multitrackAudioVideo)
                let (first, second, relay) = try await Self.startTwoIngests(scenario)
                let python = try TestEnvironment.python3()
                let publish = try EnhancedRTMPTests.peer("pyav_publish.py")
                let before = try scenario.launch(executable: python, [publish, media.url.path, first.rtmpURL("live", "mt")], name: "pyav-publisher-ingest-1")
                try await scenario.waitUntilLive(first, "live", "mt/track1", timeout: .seconds(20))
                try await scenario.waitUntilLive(first, "live", "mt/audio1", timeout: .seconds(10))
                try await scenario.waitUntilLive(relay, "live", "mt/track1", timeout: .seconds(15))
                let viewers = [
                    ("the main rendition", true, try await scenario.openViewer(relay, "live", "mt")),
                    ("track 1", true, try await scenario.openViewer(relay, "live", "mt/track1")),
                    ("audio track 1", false, try await scenario.openViewer(relay, "live", "mt/audio1")),
                ]
                try await Task.sleep(for: .seconds(6))
                // The ingest's link is lost (the encoder is killed), and the encoder comes back
                // on the other ingest at once, its clock at 0 again.
                before.send(signal: SIGKILL)
                let movedAt = ContinuousClock.now
                let after = try scenario.launch(executable: python, [publish, media.url.path, second.rtmpURL("live", "mt")], name: "pyav-publisher-ingest-2")
                try await scenario.waitUntilLive(second, "live", "mt/track1", timeout: .seconds(20))
                try await Task.sleep(until: movedAt + .seconds(30), clock: .continuous)
                var latest: [String: Int64] = [:]
                for (label, video, viewer) in viewers {
                    let stamps = try viewer.flv().tags.filter { $0.isMediaFrame && $0.isVideo == video }.map { Int64($0.timestamp) }
                    let steps = zip(stamps, stamps.dropFirst()).map { $1 - $0 }
                    let backwards = steps.filter { $0 < 0 }.count
                    latest[label] = stamps.last
                    scenario.note("\(label) on the relay: \(stamps.count) frames, \(stamps.first ?? -1)–\(stamps.last ?? -1) ms, longest step \(steps.max() ?? -1) ms, closed \(viewer.isClosed)")
                    // Open through the move, and on for its 30 s: frames spanning the 6 s
                    // before and most of the 30 after, never going back.
                    scenario.check(!viewer.isClosed, "\(label): the relay's viewer was closed by the move")
                    scenario.check((stamps.last ?? 0) - (stamps.first ?? 0) >= 30_000, "\(label): frames span \((stamps.last ?? 0) - (stamps.first ?? 0)) ms over 36 s")
                    scenario.check(backwards == 0, "\(label): \(backwards) steps back in time")
                    // The move shows as the outage it was (the encoder's restart; a track's
                    // first frame on the new ingest at its first keyframe), seconds at most.
                    scenario.check((steps.max() ?? 0) < 4000, "\(label): a step of \(steps.max() ?? 0) ms")
                }
                if let main = latest["the main rendition"], let track = latest["track 1"], let audio = latest["audio track 1"] {
                    scenario.check(abs(track - main) < 1000 && abs(audio - main) < 1000, "after the move, track 1 is \(track - main) ms and audio track 1 \(audio - main) ms from the main rendition")
                }
                // Each of the three mirrors re-based the new publisher session, logged and counted.
                // The second ingest continued the first one's timeline (which still answered,
                // in its grace period), so the relay took the new session as it was: nothing
                // re-based; and it ignored the end the first ingest announced.
                scenario.check(second.log.contains("continuing the timeline of another node's publication"), "the second ingest did not continue the first one's timeline")
                let metrics = try await relay.metrics()
                scenario.check(metrics.sum("estuary_relay_bus_new_clocks_total") == 0, "the relay re-based a continued timeline: \(metrics.describe("estuary_relay_bus_new_clocks_total"))")
                scenario.check(relay.log.contains("an earlier publisher session's end, ignored"), "the relay did not log the old session's end as ignored")
                scenario.check(after.isRunning, "the encoder on the second ingest was disconnected")
            }
        }

        @Test("One publisher per stream across the ingests: while an encoder publishes on one ingest, a second on the other is refused (BadName, ffmpeg and a raw RTMP client, from the same host or another), logged and counted; once the first is gone, only its own credentials take the stream over on the other ingest within the grace period, and then not back on the first while the second sends; the relay's viewer stays 30 s on one timeline, nothing re-based")
        func onePublisherPerStreamAcrossIngests() async throws {
            try await Scenario.run("cluster-one-publisher") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let (first, second, relay) = try await Self.startTwoIngests(scenario)
                let encoder = try scenario.publish(media, to: first.rtmpURL("live", "dual"), name: "encoder-ingest-1", loop: true)
                try await scenario.waitUntilLive(relay, "live", "dual", timeout: .seconds(20))
                let viewer = try await scenario.openViewer(relay, "live", "dual")
                let opened = ContinuousClock.now
                try await Task.sleep(for: .seconds(3))

                // A second encoder on the other ingest, while the first sends: refused there as
                // it would be on the first one, whoever it is.
                for from in ["127.0.0.1", "127.0.0.2"] {
                    let (_, status) = try await RTMPRawClient.publishing(scenario, port: second.rtmpPort, app: "live", name: "dual", from: from)
                    scenario.check(status == "NetStream.Publish.BadName", "a second publisher from \(from) on the other ingest got \(status)")
                }
                let duplicate = try scenario.publish(media, to: second.rtmpURL("live", "dual"), name: "encoder-ingest-2", loop: true)
                let refused = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) { !duplicate.isRunning }
                scenario.check(refused, "ffmpeg publishing the stream on the other ingest was not refused")
                scenario.check(second.log.contains("another ingest's publisher of the stream sent media"), "the refusal is not logged with its reason")
                let refusals = try await second.metrics().sum("estuary_publishes_refused_total", labels: ["reason": "published_elsewhere"])
                scenario.check(refusals == 3, "refusals counted: \(refusals), expected 3")
                try await Task.sleep(for: .seconds(6))

                // The first encoder is gone (its ingest keeps the stream for its 5 s grace): a
                // stranger is still refused, and the encoder itself moves to the other ingest.
                encoder.send(signal: SIGKILL)
                let left = await eventually(timeout: .seconds(5), interval: .milliseconds(100)) { first.log.contains("reason=left") }
                try scenario.require(left, "the first ingest did not see its encoder leave")
                let (_, stranger) = try await RTMPRawClient.publishing(scenario, port: second.rtmpPort, app: "live", name: "dual", from: "127.0.0.2")
                scenario.check(stranger == "NetStream.Publish.BadName", "another host took the stream over within its grace period: \(stranger)")
                scenario.check(second.log.contains("the stream belongs to another publisher on another ingest"), "the stranger's refusal is not logged with its reason")
                let moved = try scenario.publish(media, to: second.rtmpURL("live", "dual"), name: "encoder-moved", loop: true)
                try await scenario.waitUntilLive(second, "live", "dual", timeout: .seconds(15))
                // Moved: back on the first ingest, whose hub is in its grace period, the owner
                // is refused while the second ingest's encoder sends (the old hub handed the
                // stream over and no longer answers for it).
                let (_, back) = try await RTMPRawClient.publishing(scenario, port: first.rtmpPort, app: "live", name: "dual")
                scenario.check(back == "NetStream.Publish.BadName", "the owner publishing again on the first ingest after the move got \(back)")
                scenario.check(first.log.contains("another ingest's publisher of the stream sent media"), "the first ingest did not ask the second")

                try await Task.sleep(until: opened + .seconds(32), clock: .continuous)
                try await Self.checkOneTimeline(scenario, viewer, relay: relay, span: 28_000, maxStep: 1000)
                scenario.check(moved.isRunning, "the moved encoder was disconnected")
            }
        }

        /// Two publishers that start one stream on two ingests at the same moment, before
        /// either ingest's publication answers on the bus: the bus question alone let both
        /// in. Both raw RTMP clients are connected, and their `publish` commands are sent back
        /// to back; of each pair exactly one is admitted, the coordinator's claim refusing
        /// the other (or the bus, when the winner's publication was quicker).
        @Test("Two publishers starting one stream on two ingests at the same moment: exactly one is admitted (the coordinator's publish claim, the one-publisher rule as a lock), eight times out of eight; an encoder that drops and comes back on the other ingest within the claim is admitted there")
        func simultaneousPublishersOnTwoIngests() async throws {
            try await Scenario.run("cluster-simultaneous-publishers") { scenario in
                let nats = try await NATSServerProcess.start(scenario)
                let bus = ["--nats", nats.url]
                let coordinator = try await scenario.startNode(NodeConfig(), label: "coordinator", arguments: ["--role", "coordinator", "--node-id", "coordinator", "--admin-token", ClusterFailoverTests.token] + bus)
                let first = try await scenario.startNode(NodeConfig(), label: "ingest-1", arguments: ["--role", "ingest", "--node-id", "ingest-1"] + bus)
                let second = try await scenario.startNode(NodeConfig(), label: "ingest-2", arguments: ["--role", "ingest", "--node-id", "ingest-2"] + bus)
                // Both ingests have registered: the coordinator answers them.
                let registered = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) {
                    let (_, nodes) = (try? await ClusterFailoverTests.admin(coordinator, "/api/v1/nodes")) ?? (0, [:])
                    let alive = (nodes["nodes"] as? [[String: Any]] ?? []).filter { $0["state"] as? String == "alive" }.compactMap { $0["id"] as? String }
                    return Set(alive).isSuperset(of: ["ingest-1", "ingest-2"])
                }
                try scenario.require(registered, "the ingests did not register with the coordinator")
                var outcomes: [String] = []
                for trial in 0..<8 {
                    let name = "race\(trial)"
                    var clients: [(RTMPRawClient, UInt32)] = []
                    for node in trial % 2 == 0 ? [first, second] : [second, first] {
                        let client = try await RTMPRawClient.connect(port: node.rtmpPort)
                        scenario.track(client.connection)
                        try await client.plainHandshake()
                        try await client.connect(app: "live")
                        clients.append((client, try await client.createStream()))
                    }
                    // Back to back: both commands are on the wire within a millisecond.
                    let commands = clients.map { client, streamID in client.publishBytes(name: name, streamID: streamID) }
                    for (index, (client, _)) in clients.enumerated() {
                        scenario.check(await client.sendRaw(commands[index]), "the publish of \(name) could not be sent")
                    }
                    var codes: [String] = []
                    for (client, _) in clients {
                        codes.append(try await client.publishStatus())
                    }
                    outcomes.append("\(name): \(codes.joined(separator: " / "))")
                    scenario.check(
                        codes.sorted() == ["NetStream.Publish.BadName", "NetStream.Publish.Start"],
                        "\(name), published on both ingests at once, got \(codes) (expected one Start and one BadName)"
                    )
                    for (client, _) in clients { await client.close() }
                }
                let claims = (try? await coordinator.metrics().sum("estuary_coordinator_publish_claims_refused_total")) ?? -1
                scenario.note("outcomes: \(outcomes.joined(separator: "; ")); claims refused by the coordinator: \(claims)")

                // An encoder whose connection drops a moment after it started, and that comes
                // back on the other ingest within its first ingest's claim: the first ingest
                // hands the stream over (its answer is yes), and the claim goes with it.
                let endedBefore = try await first.metrics().sum("estuary_sessions_ended_total", labels: ["kind": "publish"])
                let (dropped, start) = try await RTMPRawClient.publishing(scenario, port: first.rtmpPort, app: "live", name: "moved")
                try scenario.require(start == "NetStream.Publish.Start", "the first publish of live/moved got \(start)")
                await dropped.close()
                let gone = await eventually(timeout: .seconds(2), interval: .milliseconds(20)) {
                    ((try? await first.metrics().sum("estuary_sessions_ended_total", labels: ["kind": "publish"])) ?? 0) > endedBefore
                }
                try scenario.require(gone, "the first ingest did not see its publisher of live/moved leave")
                let (_, moved) = try await RTMPRawClient.publishing(scenario, port: second.rtmpPort, app: "live", name: "moved")
                scenario.check(moved == "NetStream.Publish.Start", "the encoder back on the other ingest within the claim got \(moved)")
            }
        }

        /// What a relay's HTTP-FLV viewer of a stream whose publisher moved between ingests
        /// must have seen: open, video spanning `span` ms, never going back, no step of
        /// `maxStep` ms or more, and the relay re-basing nothing (one timeline reached it).
        static func checkOneTimeline(_ scenario: Scenario, _ viewer: HTTPFLVViewer, relay: NodeProcess, span: Int64, maxStep: Int64) async throws {
            let stamps = try viewer.flv().tags.filter { $0.isMediaFrame && $0.isVideo }.map { Int64($0.timestamp) }
            let steps = zip(stamps, stamps.dropFirst()).map { $1 - $0 }
            scenario.note("the relay's viewer: \(stamps.count) video frames, \(stamps.first ?? -1)–\(stamps.last ?? -1) ms, longest step \(steps.max() ?? -1) ms")
            scenario.check(!viewer.isClosed, "the relay's viewer was closed")
            scenario.check((stamps.last ?? 0) - (stamps.first ?? 0) >= span, "the relay's frames span \((stamps.last ?? 0) - (stamps.first ?? 0)) ms, under \(span)")
            scenario.check(steps.allSatisfy { $0 >= 0 }, "the relay's timestamps went back: \(steps.filter { $0 < 0 }.prefix(5))")
            scenario.check((steps.max() ?? 0) < maxStep, "a step of \(steps.max() ?? 0) ms on the relay")
            let clocks = try await relay.metrics().sum("estuary_relay_bus_new_clocks_total")
            scenario.check(clocks == 0, "the relay re-based \(clocks) times: more than one timeline reached it")
        }

        /// A coordinator, two ingests (a 5 s grace period each: an encoder that moves comes
        /// back on the other well within it), a transcoder when asked, and a relay.
        /// `first` and `firstArguments`: the first ingest's own settings (a drain grace, an admin token).
        static func startTwoIngests(
            _ scenario: Scenario, transcoder: Bool = false, first firstConfig: NodeConfig = NodeConfig(publisherGraceSeconds: 5), firstArguments: [String] = []
        ) async throws -> (first: NodeProcess, second: NodeProcess, relay: NodeProcess) {
            let nats = try await NATSServerProcess.start(scenario)
            let bus = ["--nats", nats.url]
            _ = try await scenario.startNode(NodeConfig(), label: "coordinator", arguments: ["--role", "coordinator", "--node-id", "coordinator", "--admin-token", "test-admin-token"] + bus)
            let first = try await scenario.startNode(firstConfig, label: "ingest-1", arguments: ["--role", "ingest", "--node-id", "ingest-1"] + firstArguments + bus)
            let second = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 5), label: "ingest-2", arguments: ["--role", "ingest", "--node-id", "ingest-2"] + bus)
            if transcoder {
                _ = try await scenario.startNode(NodeConfig(), label: "transcode", arguments: ["--role", "transcode", "--node-id", "transcode-1"] + bus)
            }
            let relay = try await scenario.startNode(NodeConfig(), label: "relay", arguments: ["--role", "relay", "--node-id", "relay-1"] + bus)
            return (first, second, relay)
        }

        /// Issue 26: SRT players where the stream is mirrored, not published: a relay (from the
        /// bus) and an edge (pulling over HTTP-FLV from that relay).
        @Test("SRT players on a relay and on an edge (pulling from the relay) stay 32 s: every frame from a keyframe, timestamps forward, audio beside video; a publisher of either is rejected with SRT code 1405; a player of a stream that is nowhere is ended, counted as refused")
        func srtPlayersOnRelayAndEdge() async throws {
            try await Scenario.run("cluster-srt-players") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let nats = try await NATSServerProcess.start(scenario)
                let ports = try await FreePorts.allocate(2)
                let ingest = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1), label: "ingest", arguments: ["--role", "ingest", "--nats", nats.url, "--node-id", "ingest-1"])
                let relay = try await scenario.startNode(NodeConfig(), label: "relay", arguments: ["--role", "relay", "--nats", nats.url, "--node-id", "relay-1", "--srt-port", String(ports[0])])
                let edge = try await scenario.startNode(NodeConfig(), label: "edge", arguments: ["--role", "edge", "--node-id", "edge-1", "--upstream", relay.httpBase, "--srt-port", String(ports[1])])
                _ = try scenario.publish(media, to: ingest.rtmpURL("live", "cam"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(ingest, "live", "cam", timeout: .seconds(15))

                // Nothing is mirrored yet on either: the handshake lets the plays through, and
                // the admission finds the stream on the bus (relay) or upstream (edge).
                let relayRecording = scenario.file("relay-srt.ts"), edgeRecording = scenario.file("edge-srt.ts")
                let relayPlayer = try SRTTests.recordOverSRT(scenario, port: ports[0], streamID: "read:live/cam", into: relayRecording, name: "relay-srt-player")
                let edgePlayer = try SRTTests.recordOverSRT(scenario, port: ports[1], streamID: "#!::r=live/cam,m=request", into: edgeRecording, name: "edge-srt-player")

                // Neither takes publishers: the caller is told so in the handshake.
                for (node, port) in [("relay", ports[0]), ("edge", ports[1])] {
                    let code = await SRTCaller.rejection(port: port, streamID: "publish:live/other")
                    scenario.check(code == 1405, "an SRT publisher of the \(node) got rejection \(code), expected 1405 (SRT_REJX_BAD_MODE)")
                }
                // A stream that is nowhere: through the handshake (the cluster cannot be asked
                // there), then ended by the admission.
                let nowhere = try SRTTests.recordOverSRT(scenario, port: ports[0], streamID: "read:live/nowhere", seconds: 5, into: scenario.file("nowhere.ts"), name: "nowhere-srt-player")
                let nowhereEnd = await nowhere.finish(timeout: .seconds(25))
                scenario.check(!nowhereEnd.succeeded, "an SRT player of a stream that is nowhere: \(nowhereEnd)")

                for (player, recording, label) in [(relayPlayer, relayRecording, "the relay's SRT player"), (edgePlayer, edgeRecording, "the edge's SRT player")] {
                    let ended = await player.finish(timeout: .seconds(50))
                    scenario.check(ended.succeeded, "\(label): \(ended)")
                    try await SRTTests.checkRecording(scenario, recording, label)
                }
                for (node, label) in [(relay, "relay"), (edge, "edge")] {
                    let metrics = try await node.metrics().text
                    scenario.check(metrics.contains("estuary_srt_connections_total{result=\"bad_mode\"} 1"), "\(label): the rejected publisher is not counted: \(metrics.split(separator: "\n").filter { $0.contains("estuary_srt_connections") })")
                }
                let relayMetrics = try await relay.metrics().text
                scenario.check(relayMetrics.contains("estuary_srt_connections_total{result=\"play_refused\"} 1"), "the relay's refused SRT play is not counted: \(relayMetrics.split(separator: "\n").filter { $0.contains("estuary_srt_connections") })")
            }
        }

        @Test("Stopping nats-server for 3 s: the relay's viewer gets media again within 2 s of its return, without restarting nodes")
        func natsOutage() async throws {
            try await Scenario.run("cluster-nats-outage") { scenario in
                // 1 s GOPs: whether the ingest's buffered frames reach the relay depends on which of
                // the two reconnects first; if they are lost, the relay resumes at the next keyframe.
                let media = try await MediaLibrary.shared.file(.shortGOPAudioVideo)
                let (nats, ingest, relays) = try await Self.startCluster(scenario, relays: 1)
                // Readiness needs the coordinator to have answered once (and the bus to be up).
                _ = try await scenario.startNode(NodeConfig(), label: "coordinator", arguments: ["--role", "coordinator", "--node-id", "coordinator", "--nats", nats.url])
                _ = try scenario.publish(media, to: ingest.rtmpURL("live", "outage"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(ingest, "live", "outage")
                let viewer = try await scenario.openViewer(relays[0], "live", "outage")
                try scenario.require(await viewer.waitForProgress(beyond: 0, bytes: 50_000, timeout: .seconds(10)), "the relay viewer got no media before the outage")
                // The coordinator starts after the relay: the relay is ready only once a heartbeat
                // has reached it, which must happen before the outage for the last check to mean anything.
                let readyBefore = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) {
                    (try? await HTTPClient.get(port: relays[0].httpPort, path: "/readyz", timeout: .seconds(2)))?.status == 200
                }
                try scenario.require(readyBefore, "the relay never became ready before the outage")

                await nats.kill()
                try await Task.sleep(for: .seconds(3))
                let beforeReturn = viewer.receivedBytes
                try await nats.start()
                let returned = ContinuousClock.now
                let flowing = await viewer.waitForProgress(beyond: beforeReturn, bytes: 30_000, timeout: .seconds(2))
                scenario.check(flowing, "no media reached the relay viewer within 2 s of NATS's return (\(viewer.receivedBytes - beforeReturn) bytes)")
                scenario.note("media again \(ContinuousClock.now - returned) after NATS returned")
                scenario.check(!viewer.isClosed, "the relay closed its viewer during the outage")
                let flv = try viewer.flv()
                scenario.check(flv.timestampRegressions().isEmpty, "timestamps went backwards across the outage: \(flv.timestampRegressions().prefix(3))")
                // Ready again once its bus is back: the bus reconnects within a second of NATS's return.
                let readyAfter = await eventually(timeout: .seconds(5), interval: .milliseconds(200)) {
                    (try? await HTTPClient.get(port: relays[0].httpPort, path: "/readyz", timeout: .seconds(2)))?.status == 200
                }
                scenario.check(readyAfter, "the relay is not ready within 5 s of NATS's return")
            }
        }

        @Test("Bad media messages on the bus are dropped and counted by the relay; its viewers carry on")
        func badBusMessages() async throws {
            try await Scenario.run("cluster-bad-messages") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let (nats, ingest, relays) = try await Self.startCluster(scenario, relays: 1)
                _ = try scenario.publish(media, to: ingest.rtmpURL("live", "bad"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(ingest, "live", "bad")
                let viewer = try await scenario.openViewer(relays[0], "live", "bad")
                try scenario.require(await viewer.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(10)), "no media before the bad messages")

                // A raw NATS client: a truncated header, a wrong version, an oversized announcement.
                let client = try await RawConnection.connect(port: nats.port)
                scenario.track(client)
                var header = [UInt8](repeating: 0, count: 36)
                header[0] = 0xEB
                header[1] = 99  // version
                var oversized = [UInt8](repeating: 0, count: 36)
                oversized[0] = 0xEB
                oversized[1] = 1
                oversized[2] = 9  // video
                oversized[31] = 1  // one fragment
                oversized[32] = 0x7F  // frame length far above the bound (bytes 32..<36, big-endian)
                var wire = Array("CONNECT {\"verbose\":false}\r\n".utf8)
                for payload in [[UInt8]([0xEB, 0x01, 0x02]), header, oversized] {
                    wire += Array("PUB media.live.bad.src \(payload.count)\r\n".utf8) + payload + Array("\r\n".utf8)
                }
                wire += Array("PING\r\n".utf8)
                try await client.send(wire)
                let counted = await eventually(timeout: .seconds(5), interval: .milliseconds(100)) {
                    guard let metrics = try? await relays[0].metrics() else { return false }
                    return metrics.sum("estuary_bus_messages_dropped_total") >= 3
                }
                let metrics = try await relays[0].metrics()
                scenario.check(counted, "the relay did not count 3 dropped bus messages: \(metrics.describe("estuary_bus_messages_dropped_total"))")
                let before = viewer.receivedBytes
                scenario.check(await viewer.waitForProgress(beyond: before, bytes: 20_000, timeout: .seconds(5)), "the relay viewer stalled after the bad messages")
                scenario.check(!viewer.isClosed, "the relay closed its viewer")
            }
        }
    }
}

extension IntegrationTests {
    /// The whole cluster: coordinator (SQLite), ingest, two transcoders, a relay.
    @Suite("Cluster with coordinator and transcoders")
    struct ClusterFailoverTests {
        static let token = "test-admin-token"

        static func startCluster(_ scenario: Scenario) async throws -> (nats: NATSServerProcess, coordinator: NodeProcess, ingest: NodeProcess, transcoders: [NodeProcess], relay: NodeProcess) {
            let nats = try await NATSServerProcess.start(scenario)
            let bus = ["--nats", nats.url]
            let coordinator = try await scenario.startNode(NodeConfig(), label: "coordinator", arguments: ["--role", "coordinator", "--node-id", "coordinator", "--admin-token", token] + bus)
            let ingest = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1), label: "ingest", arguments: ["--role", "ingest", "--node-id", "ingest-1"] + bus)
            var transcoders: [NodeProcess] = []
            for index in 1...2 {
                transcoders.append(try await scenario.startNode(NodeConfig(), label: "transcode\(index)", arguments: ["--role", "transcode", "--node-id", "transcode-\(index)"] + bus))
            }
            let relay = try await scenario.startNode(NodeConfig(), label: "relay", arguments: ["--role", "relay", "--node-id", "relay-1"] + bus)
            return (nats, coordinator, ingest, transcoders, relay)
        }

        @Test("An ABR stream's ingest dies (kill -9) and its encoder moves to another: the relay and the transcoder re-base the new clock, and the relay's viewers of the source and of a transcoded rung stay open 30 s after the move, timestamps forward, the rung within 1 s of the source; an LL-HLS player of the relay plays 40 s through the move, which the playlist marks a discontinuity")
        func ladderEncoderMovesToAnotherIngest() async throws {
            try await Scenario.run("cluster-ladder-ingest-move") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let (first, second, relay) = try await ClusterTests.startTwoIngests(scenario, transcoder: true)
                let before = try scenario.publish(media, to: first.rtmpURL("abr", "cam"), name: "publisher-ingest-1", loop: true)
                try await scenario.waitUntilLive(relay, "abr", "cam_240p", timeout: .seconds(20))
                let viewers = [
                    ("the source", try await scenario.openViewer(relay, "abr", "cam")),
                    ("the 240p rung", try await scenario.openViewer(relay, "abr", "cam/240p")),
                ]
                // And an HLS player of the relay's LL-HLS master, 40 s: it plays through the
                // discontinuity the move is.
                try await Task.sleep(for: .seconds(3))
                let python = try TestEnvironment.python3()
                let hlsPlayer = try scenario.launch(
                    executable: python, [try EnhancedRTMPTests.peer("pyav_watch.py"), "\(relay.httpBase)/abr/cam/llhls.m3u8", "40"], name: "pyav-relay-llhls"
                )
                try await Task.sleep(for: .seconds(5))
                // The ingest node dies with its encoder's connection: nobody answers for the
                // old timeline, so the new ingest starts its own clock.
                await first.kill()
                before.send(signal: SIGKILL)
                let movedAt = ContinuousClock.now
                let after = try scenario.publish(media, to: second.rtmpURL("abr", "cam"), name: "publisher-ingest-2", loop: true)
                try await Task.sleep(until: movedAt + .seconds(30), clock: .continuous)
                var latest: [String: Int64] = [:]
                for (label, viewer) in viewers {
                    let stamps = try viewer.flv().tags.filter { $0.isMediaFrame && $0.isVideo }.map { Int64($0.timestamp) }
                    let steps = zip(stamps, stamps.dropFirst()).map { $1 - $0 }
                    latest[label] = stamps.last
                    scenario.note("\(label) on the relay: \(stamps.count) video frames, \(stamps.first ?? -1)–\(stamps.last ?? -1) ms, longest step \(steps.max() ?? -1) ms, closed \(viewer.isClosed)")
                    scenario.check(!viewer.isClosed, "\(label): the relay's viewer was closed by the move")
                    scenario.check((stamps.last ?? 0) - (stamps.first ?? 0) >= 30_000, "\(label): frames span \((stamps.last ?? 0) - (stamps.first ?? 0)) ms over 38 s")
                    scenario.check(steps.allSatisfy { $0 > 0 } && (steps.max() ?? 0) < 4000, "\(label): steps back or over 4 s: \(steps.filter { $0 <= 0 || $0 >= 4000 }.prefix(5))")
                }
                if let source = latest["the source"], let rung = latest["the 240p rung"] {
                    scenario.check(abs(rung - source) < 1000, "after the move, the rung is \(rung - source) ms from the source")
                }
                if let watch = try await EnhancedRTMPTests.watched(scenario, hlsPlayer, "the relay's LL-HLS player") {
                    scenario.check(watch.decoded >= 1000 && watch.decodeErrors == 0 && watch.dtsRegressions == 0,
                                   "the relay's LL-HLS player over 40 s: \(watch.decoded) frames decoded, \(watch.decodeErrors) errors, \(watch.dtsRegressions) DTS regressions")
                    scenario.check(watch.longestWait < EnhancedRTMPTests.hlsMaxWait, "the relay's LL-HLS player waited \(watch.longestWait) s for a frame")
                }
                let playlist = try await scenario.hlsGet(relay, "/abr/cam/src/llhls.m3u8")
                scenario.check(playlist.bodyText.contains("#EXT-X-DISCONTINUITY"), "the relay's playlist does not mark the move as a discontinuity")
                // The relay re-based its source mirror (and the transcoder its own, or the rung
                // would not be within a second of the source).
                let metrics = try await relay.metrics()
                scenario.check(metrics.sum("estuary_relay_bus_new_clocks_total") >= 1, "the relay did not re-base: \(metrics.describe("estuary_relay_bus_new_clocks_total"))")
                scenario.check(after.isRunning, "the encoder on the second ingest was disconnected")
            }
        }

        @Test("Every rendition plays from both relays over HTTP-FLV and HLS, with the rungs listed in the relays' master playlists")
        func everyRenditionFromBothRelays() async throws {
            try await Scenario.run("cluster-renditions") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let cluster = try await Self.startCluster(scenario)
                // The second relay has no ladder of its own: the rungs its HLS master lists can
                // only come from the coordinator's lookup of the stream.
                let second = try await scenario.startNode(NodeConfig(ladders: [:]), label: "relay2", arguments: ["--role", "relay", "--node-id", "relay-2", "--nats", cluster.nats.url])
                _ = try scenario.publish(media, to: cluster.ingest.rtmpURL("abr", "all"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(cluster.relay, "abr", "all_240p", timeout: .seconds(20))
                for (relay, label) in [(cluster.relay, "relay-1"), (second, "relay-2")] {
                    for (name, width, height) in [("all", 640, 360), ("all_360p", 640, 360), ("all_240p", 426, 240)] {
                        let probe = try await scenario.run("ffprobe", ["-v", "error", "-read_intervals", "%+2", "-show_entries", "stream=index,codec_type,codec_name,width,height", "-of", "json", relay.flvURL("abr", name)], name: "\(label)-\(name)", timeout: .seconds(20))
                        let report = try? ProbeReport.decode(probe.stdout)
                        scenario.check(probe.succeeded && report?.video?.width == width && report?.video?.height == height && report?.audio?.codecName == "aac",
                                       "\(label) \(name).flv: \(report?.video?.width ?? 0)x\(report?.video?.height ?? 0) \(report?.audio?.codecName ?? "no audio"): \(probe)")
                    }
                    // The rungs' own addresses, mirrored from the bus: HTTP-FLV `/abr/all/240p.flv` and
                    // RTMP application `abr/all`, stream `240p` (the old `all_240p` form is above).
                    for (label2, url) in [("flv", relay.flvURL("abr", "all/240p")), ("rtmp", relay.rtmpURL("abr/all", "240p"))] {
                        let probe = try await scenario.run("ffprobe", ["-v", "error", "-read_intervals", "%+2", "-show_entries", "stream=index,codec_type,codec_name,width,height", "-of", "json", url], name: "\(label)-rung-\(label2)", timeout: .seconds(20))
                        let report = try? ProbeReport.decode(probe.stdout)
                        scenario.check(probe.succeeded && report?.video?.width == 426 && report?.video?.height == 240,
                                       "\(label) \(url): \(report?.video?.width ?? 0)x\(report?.video?.height ?? 0): \(probe)")
                    }
                    var master = ""
                    let listed = await eventually(timeout: .seconds(15), interval: .milliseconds(500)) {
                        guard let response = try? await scenario.hlsGet(relay, "/abr/all/index.m3u8"), response.status == 200 else { return false }
                        master = response.bodyText
                        return master.contains("src/index.m3u8") && master.contains("360p/index.m3u8") && master.contains("240p/index.m3u8")
                    }
                    scenario.check(listed, "\(label)'s master playlist does not list src, 360p and 240p:\n\(master)")
                    scenario.check(master.contains("RESOLUTION=426x240"), "\(label)'s master playlist has no 426x240 entry:\n\(master)")
                    let playlist = try await scenario.waitForSegments(relay, "/abr/all", count: 1, timeout: .seconds(15))
                    scenario.check(!playlist.segments.isEmpty, "\(label) has no src segments")
                    // The rung's first segment closes a little after the source's (the rung's frames
                    // come through the transcoder), so it is waited for, bounded.
                    var rung: HTTPResponse?
                    let rungSegmented = await eventually(timeout: .seconds(10), interval: .milliseconds(250)) {
                        rung = try? await scenario.hlsGet(relay, "/abr/all/240p/index.m3u8")
                        return rung?.status == 200 && rung?.bodyText.contains(".ts") == true
                    }
                    scenario.check(rungSegmented, "\(label)'s 240p media playlist: \(rung?.status ?? 0)\n\(rung?.bodyText ?? "")")
                }

                // A player of a rung on the relay without a ladder counts for the stream in
                // the coordinator's listing, under that relay.
                _ = try await scenario.openViewer(second, "abr", "all_240p")
                var perRelay: [String: Any] = [:]
                let counted = await eventually(timeout: .seconds(5), interval: .milliseconds(250)) {
                    let (_, json) = (try? await Self.admin(cluster.coordinator, "/api/v1/streams")) ?? (0, [:])
                    let stream = (json["streams"] as? [[String: Any]])?.first { $0["name"] as? String == "all" && $0["state"] as? String == "live" }
                    perRelay = stream?["viewers"] as? [String: Any] ?? [:]
                    return (perRelay["relay-2"] as? Int ?? 0) >= 1
                }
                scenario.check(counted, "the rung's player on relay-2 is not counted for abr/all: viewers \(perRelay)")
            }
        }

        /// Issue 23's regression: a transcoder's feed of a bus mirror did not count as a use of
        /// it, so the mirror was let go as unwatched after 5 s and every rung ended, dropping its
        /// viewers, about every 6 s. Viewers of every rendition stay a minute on two relays.
        @Test("Five HTTP-FLV viewers of each rendition on each of two relays stay 60 s: nobody dropped, no gap over 500 ms")
        func renditionsHoldForAMinute() async throws {
            try await Scenario.run("cluster-renditions-60s") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let cluster = try await Self.startCluster(scenario)
                let second = try await scenario.startNode(NodeConfig(), label: "relay2", arguments: ["--role", "relay", "--node-id", "relay-2", "--nats", cluster.nats.url])
                _ = try scenario.publish(media, to: cluster.ingest.rtmpURL("abr", "long"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(cluster.relay, "abr", "long/240p", timeout: .seconds(20))
                try await scenario.waitUntilLive(second, "abr", "long/240p", timeout: .seconds(20))
                var viewers: [(label: String, viewer: HTTPFLVViewer)] = []
                for (relay, relayLabel) in [(cluster.relay, "relay-1"), (second, "relay-2")] {
                    for name in ["long", "long/360p", "long/240p"] {
                        for index in 1...5 {
                            viewers.append(("\(relayLabel) \(name) #\(index)", try await scenario.openViewer(relay, "abr", name)))
                        }
                    }
                }
                for (label, viewer) in viewers {
                    try scenario.require(await viewer.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(10)), "\(label) got no media")
                }
                let waits = try await withThrowingTaskGroup(of: (Int, Duration).self) { group in
                    for (index, entry) in viewers.enumerated() {
                        let viewer = entry.viewer
                        let start = viewer.receivedBytes
                        group.addTask {
                            (index, try await longestWait(for: .seconds(60), every: .milliseconds(50), from: start) { viewer.receivedBytes })
                        }
                    }
                    var waits = [Duration](repeating: .zero, count: viewers.count)
                    for try await (index, wait) in group { waits[index] = wait }
                    return waits
                }
                for ((label, viewer), wait) in zip(viewers, waits) {
                    scenario.check(!viewer.isClosed, "\(label) was disconnected")
                    scenario.check(wait < .milliseconds(500), "\(label): nothing arrived for \(wait)")
                    let flv = try viewer.flv()
                    let regressions = flv.timestampRegressions()
                    scenario.check(regressions.isEmpty, "\(label): timestamps go backwards \(regressions.prefix(3))")
                    let video = flv.videoFrames.map(\.timestamp)
                    let step = zip(video, video.dropFirst()).map { Int64($1) - Int64($0) }.max() ?? 0
                    scenario.check(step < 500, "\(label): the video timeline jumps by \(step) ms")
                    // 60 s of 25 fps video at least, with the joining GOP.
                    scenario.check(video.count >= 1400, "\(label): \(video.count) video frames in a minute")
                    if let first = video.first, let last = video.last {
                        scenario.check(Int64(last) - Int64(first) >= 59_000, "\(label): the timeline covers \(Int64(last) - Int64(first)) ms")
                    }
                }
                // The cause itself: no transcoder lets go of its source, no relay sees a rung end.
                for (index, node) in cluster.transcoders.enumerated() {
                    scenario.check(!node.log.contains("nobody watches it"), "transcode-\(index + 1) let its source mirror go")
                }
                for (relay, label) in [(cluster.relay, "relay-1"), (second, "relay-2")] {
                    scenario.check(!relay.log.contains("its publisher ended it"), "a rendition ended on \(label)")
                }
            }
        }

        /// The transcoder running `app/name`'s job (waited for, bounded) and its index among
        /// `startCluster`'s transcoders.
        static func owner(of app: String, _ name: String, coordinator: NodeProcess) async throws -> (id: String, index: Int) {
            var owner: String?
            _ = await eventually(timeout: .seconds(5), interval: .milliseconds(200)) {
                owner = try? await transcoder(of: app, name, coordinator: coordinator)
                return owner != nil
            }
            guard let owner, let index = ["transcode-1", "transcode-2"].firstIndex(of: owner) else {
                throw IntegrationFailure("the coordinator shows no running transcoder for \(app)/\(name)")
            }
            return (owner, index)
        }

        /// Runs `fault` and checks that a rung keyframe newer than anything `viewer` had
        /// reaches it within `bound`: the dying transcoder's frames in flight are no keyframe
        /// (its GOPs are the source's 2 s), and the survivor's first picture for the relay is
        /// one (it joins at the live edge; a relay drops frames that refer to a keyframe it
        /// could not pass).
        static func checkRungComesBack(
            to viewer: HTTPFLVViewer, within bound: Duration, after what: String, scenario: Scenario, fault: () async -> Void
        ) async throws {
            let lastBefore = try viewer.flv().videoFrames.last?.timestamp ?? 0
            let start = ContinuousClock.now
            await fault()
            var elapsed: Duration?
            _ = await eventually(timeout: .seconds(6), interval: .milliseconds(20)) {
                guard let flv = try? viewer.flv(), flv.videoFrames.contains(where: { $0.isKeyframe && $0.timestamp > lastBefore }) else { return false }
                elapsed = ContinuousClock.now - start
                return true
            }
            let seen = elapsed.map { "\($0)" } ?? "more than 6 s"
            scenario.note("\(what); a new rung keyframe reached the viewer after \(seen)")
            scenario.check(elapsed.map { $0 <= bound } ?? false, "the rung did not come back within \(bound) of \(what): \(seen)")
        }

        /// `GET path` on the coordinator's admin API, as JSON.
        static func admin(_ coordinator: NodeProcess, _ path: String, token: String? = ClusterFailoverTests.token) async throws -> (Int, [String: Any]) {
            try await coordinator.admin(path, token: token)
        }

        /// The transcoder node the coordinator placed `app/name` on.
        static func transcoder(of app: String, _ name: String, coordinator: NodeProcess) async throws -> String? {
            let (_, json) = try await admin(coordinator, "/api/v1/streams")
            let streams = json["streams"] as? [[String: Any]] ?? []
            let stream = streams.first { $0["app"] as? String == app && $0["name"] as? String == name && $0["state"] as? String == "live" }
            let renditions = stream?["renditions"] as? [[String: Any]] ?? []
            return renditions.first { $0["state"] as? String == "running" }?["transcoderNode"] as? String
        }

        @Test("kill -9 of the transcoder: its rungs come back from the other one within 2 s, on the same timeline, decodable, for viewers already watching")
        func transcoderFailover() async throws {
            try await Scenario.run("cluster-failover") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let cluster = try await Self.startCluster(scenario)
                let (status, _) = try await Self.admin(cluster.coordinator, "/api/v1/nodes", token: nil)
                scenario.check(status == 401, "the admin API answered \(status) without a token")
                _ = try scenario.publish(media, to: cluster.ingest.rtmpURL("abr", "show"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(cluster.relay, "abr", "show_240p", timeout: .seconds(20))
                let viewer = try await scenario.openViewer(cluster.relay, "abr", "show_240p")
                try scenario.require(await viewer.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(10)), "the rung viewer got nothing")
                let (owner, index) = try await Self.owner(of: "abr", "show", coordinator: cluster.coordinator)
                // The facts come with the ingest's periodic report, which may follow the
                // transcoder's placement: wait for them (bounded).
                var facts: [String: Any]?
                _ = await eventually(timeout: .seconds(5), interval: .milliseconds(200)) {
                    guard let (_, streamsJSON) = try? await Self.admin(cluster.coordinator, "/api/v1/streams") else { return false }
                    facts = (streamsJSON["streams"] as? [[String: Any]])?.first?["facts"] as? [String: Any]
                    return facts?["videoCodec"] != nil
                }
                scenario.check(facts?["videoCodec"] as? String == "h264" && facts?["width"] as? Int == 640 && facts?["audioSampleRate"] as? Int == 44100,
                               "the admin API does not describe the stream as ffprobe would: \(facts ?? [:])")

                try await Self.checkRungComesBack(to: viewer, within: .seconds(2), after: "kill -9 of \(owner)", scenario: scenario) {
                    await cluster.transcoders[index].kill()
                }
                let survivor = ["transcode-1", "transcode-2"][1 - index]
                let moved = await eventually(timeout: .seconds(3), interval: .milliseconds(200)) {
                    (try? await Self.transcoder(of: "abr", "show", coordinator: cluster.coordinator)) == survivor
                }
                scenario.check(moved, "the coordinator does not show the job on \(survivor)")
                // The viewer's stream across the failover decodes without an error (a P-frame of
                // the survivor's whose keyframe the viewer never got would be one).
                try await Task.sleep(for: .seconds(1))
                let recording = scenario.file("failover-240p.flv")
                try Data(try viewer.response().body).write(to: recording)
                let decoded = try await scenario.decodeWithFFmpeg(recording.path, name: "decode-failover")
                scenario.check(decoded.succeeded && decoded.stderr.isEmpty, "the rung viewer's stream across the failover does not decode cleanly: \(decoded.stderr.prefix(600))")
                let flv = try viewer.flv()
                scenario.check(flv.timestampRegressions().isEmpty, "rung timestamps went backwards across the failover: \(flv.timestampRegressions().prefix(3))")
                scenario.check(!viewer.isClosed, "the relay closed the rung viewer")
            }
        }
    }
}

extension IntegrationTests.ClusterFailoverTests {
    /// Issue 23, item 3: liveness must not depend on a pool or an event loop the media
    /// saturates. Two busy loops take both cores for a minute while the transcoder encodes its
    /// ladder: it keeps its job. A SIGSTOP, which no busy node looks like, still moves the job
    /// within the failover bound.
    @Test("A transcoder saturated for 60 s keeps its job; a SIGSTOP of it moves the job within 2 s")
    func busyIsNotDead() async throws {
        try await Scenario.run("cluster-busy-not-dead") { scenario in
            let media = try await MediaLibrary.shared.file(.gopAudioVideo)
            let cluster = try await Self.startCluster(scenario)
            _ = try scenario.publish(media, to: cluster.ingest.rtmpURL("abr", "busy"), name: "publisher", loop: true)
            try await scenario.waitUntilLive(cluster.relay, "abr", "busy/240p", timeout: .seconds(20))
            let (owner, index) = try await Self.owner(of: "abr", "busy", coordinator: cluster.coordinator)
            let hogs = try (0..<2).map { try scenario.launch("sh", ["-c", "while :; do :; done"], name: "busy-loop-\($0)") }
            let start = ContinuousClock.now
            var moves: [String] = []
            var samples = 0
            while ContinuousClock.now - start < .seconds(60) {
                try await Task.sleep(for: .milliseconds(500))
                guard let now = try? await Self.transcoder(of: "abr", "busy", coordinator: cluster.coordinator) else { continue }
                samples += 1
                if now != owner { moves.append(now) }
            }
            for hog in hogs { hog.send(signal: SIGKILL) }
            scenario.note("60 s saturated: \(samples) samples of the job's owner, \(moves.count) elsewhere")
            scenario.check(samples >= 30, "the admin API answered only \(samples) times in 60 s")
            scenario.check(moves.isEmpty, "the saturated transcoder lost its job: seen on \(Set(moves))")
            scenario.check(!cluster.coordinator.log.contains("Node \(owner) is dead"), "the coordinator declared the busy \(owner) dead")

            let viewer = try await scenario.openViewer(cluster.relay, "abr", "busy/240p")
            try scenario.require(await viewer.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(10)), "the rung viewer got nothing")
            try await Task.sleep(for: .milliseconds(500))
            try await Self.checkRungComesBack(to: viewer, within: .seconds(2), after: "SIGSTOP of \(owner)", scenario: scenario) {
                cluster.transcoders[index].process.send(signal: SIGSTOP)
            }
            cluster.transcoders[index].process.send(signal: SIGCONT)
            let flv = try viewer.flv()
            scenario.check(flv.timestampRegressions().isEmpty, "rung timestamps went backwards across the move: \(flv.timestampRegressions().prefix(3))")
            scenario.check(!viewer.isClosed, "the relay closed the rung viewer")
        }
    }

    /// Issue 23, item 8: the master playlist of an ABR stream on a relay and on an edge, cold.
    /// Before, the first answer listed renditions with no complete segment (ffmpeg read their
    /// empty media playlists once and gave up: "Output file #0 does not contain any stream"),
    /// and which renditions were listed changed from one poll to the next.
    @Test("A cold player of an ABR stream's master playlist plays on a relay and on an edge, and the master lists the same renditions at every poll")
    func coldMasterPlaylistOnRelayAndEdge() async throws {
        try await Scenario.run("cluster-cold-master") { scenario in
            let media = try await MediaLibrary.shared.file(.gopAudioVideo)
            let cluster = try await Self.startCluster(scenario)
            let edge = try await scenario.startNode(
                NodeConfig(), label: "edge",
                arguments: ["--role", "edge", "--node-id", "edge-1", "--upstream", cluster.relay.httpBase, "--nats", cluster.nats.url])
            _ = try scenario.publish(media, to: cluster.ingest.rtmpURL("abr", "cold"), name: "publisher", loop: true)
            // Live on the bus, rungs included, with no HLS request to anyone yet: the relay's
            // mirrors are opened by the HTTP-FLV probe only (and let go 5 s after).
            try await scenario.waitUntilLive(cluster.ingest, "abr", "cold", timeout: .seconds(15))
            try await Task.sleep(for: .seconds(8))
            for (node, label) in [(cluster.relay, "relay"), (edge, "edge")] {
                let url = "\(node.httpBase)/abr/cold/index.m3u8"
                let decoded = try await scenario.decodeWithFFmpeg(url, seconds: 4, name: "cold-\(label)", timeout: .seconds(40))
                scenario.check(decoded.succeeded, "a cold ffmpeg of \(label)'s master playlist failed: \(decoded)")
                let (probe, report) = try await scenario.probeStreams(url, name: "cold-probe-\(label)", timeout: .seconds(30))
                scenario.check(report?.video?.codecName == "h264" && report?.audio?.codecName == "aac", "\(label)'s master: \(probe)")
            }
            // Every poll lists the same renditions: the source and both rungs a 360p source has.
            var answers: [Set<String>] = []
            for _ in 0..<20 {
                for node in [cluster.relay, edge] {
                    guard let master = try? await scenario.hlsGet(node, "/abr/cold/index.m3u8"), master.status == 200 else {
                        answers.append([])
                        continue
                    }
                    answers.append(Set((try? MasterPlaylist.parse(master.bodyText))?.variants.map(\.uri) ?? []))
                }
                try await Task.sleep(for: .milliseconds(500))
            }
            let expected: Set<String> = ["src/index.m3u8", "360p/index.m3u8", "240p/index.m3u8"]
            let odd = answers.filter { $0 != expected }
            scenario.check(odd.isEmpty, "\(odd.count) of \(answers.count) master playlists did not list exactly \(expected.sorted()): \(odd.prefix(3).map { $0.sorted() })")
            // The coordinator says what is encoded, at its real size: the default ladder's
            // 720p and 480p are skipped for a 360p source, not "running" at width 0.
            let (_, json) = try await Self.admin(cluster.coordinator, "/api/v1/streams")
            let stream = (json["streams"] as? [[String: Any]])?.first { $0["name"] as? String == "cold" }
            var renditions: [String: String] = [:]
            for rendition in stream?["renditions"] as? [[String: Any]] ?? [] {
                let name = rendition["rung"] as? String ?? "?"
                renditions[name] = "\(rendition["state"] as? String ?? "?") \(rendition["width"] as? Int ?? -1)x\(rendition["height"] as? Int ?? -1)"
            }
            scenario.check(renditions == ["720p": "skipped 0x720", "480p": "skipped 0x480", "360p": "running 640x360", "240p": "running 426x240"],
                           "GET /api/v1/streams renditions: \(renditions)")
        }
    }

    /// Issue 23, items 5 and 6: a NATS cluster of three routed servers, and one of them dying
    /// under load. The nodes connected to it reconnect to another of the three; a relay whose
    /// subscription lost messages meanwhile refills the gap from the publisher's GOP instead
    /// of waiting for the next keyframe, and the transcoder's beacons, buffered across the
    /// reconnect, keep its lease.
    @Test("Three routed nats-servers: killing the one the transcoder is on, under load (a publisher, two transcoders, two relays, 20 viewers), costs no viewer a second over 30 s and moves no job")
    func aNATSServerDiesUnderLoad() async throws {
        try await Scenario.run("cluster-nats-server-dies") { scenario in
            let media = try await MediaLibrary.shared.file(.gopAudioVideo)
            let nats = try await NATSClusterProcess.start(scenario)
            let bus = ["--nats", nats.urls]
            let coordinator = try await scenario.startNode(NodeConfig(), label: "coordinator", arguments: ["--role", "coordinator", "--node-id", "coordinator", "--admin-token", Self.token] + bus)
            let ingest = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1), label: "ingest", arguments: ["--role", "ingest", "--node-id", "ingest-1"] + bus)
            for index in 1...2 {
                _ = try await scenario.startNode(NodeConfig(), label: "transcode\(index)", arguments: ["--role", "transcode", "--node-id", "transcode-\(index)"] + bus)
            }
            var relays: [NodeProcess] = []
            for index in 1...2 {
                relays.append(try await scenario.startNode(NodeConfig(), label: "relay\(index)", arguments: ["--role", "relay", "--node-id", "relay-\(index)"] + bus))
            }
            _ = try scenario.publish(media, to: ingest.rtmpURL("abr", "nc"), name: "publisher", loop: true)
            for relay in relays { try await scenario.waitUntilLive(relay, "abr", "nc/240p", timeout: .seconds(20)) }
            var viewers: [(label: String, viewer: HTTPFLVViewer)] = []
            for (relayIndex, relay) in relays.enumerated() {
                for (name, count) in [("nc", 4), ("nc/360p", 3), ("nc/240p", 3)] {
                    for index in 1...count {
                        viewers.append(("relay-\(relayIndex + 1) \(name) #\(index)", try await scenario.openViewer(relay, "abr", name)))
                    }
                }
            }
            for (label, viewer) in viewers {
                try scenario.require(await viewer.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(10)), "\(label) got no media")
            }
            var owner: String?
            _ = await eventually(timeout: .seconds(5), interval: .milliseconds(200)) {
                owner = try? await Self.transcoder(of: "abr", "nc", coordinator: coordinator)
                return owner != nil
            }
            let owned = try #require(owner, "the coordinator shows no running transcoder for abr/nc")
            // The server that most of the transcoder, the relays and the ingest are on (the
            // client picks one of the three at random).
            var placement: [String: Int] = [:]
            for name in [owned, "relay-1", "relay-2", "ingest-1"] {
                placement[name] = await nats.server(of: name)
            }
            let counts = Dictionary(grouping: placement.values, by: { $0 }).mapValues(\.count)
            let victim = counts.max { ($0.value, $1.key) < ($1.value, $0.key) }?.key ?? 0
            scenario.note("on the servers: \(placement.sorted { $0.key < $1.key }.map { "\($0.key) nats-\($0.value + 1)" }); killing nats-\(victim + 1)")

            let waits = try await withThrowingTaskGroup(of: (Int, Duration).self) { group in
                for (index, entry) in viewers.enumerated() {
                    let viewer = entry.viewer
                    let start = viewer.receivedBytes
                    group.addTask { (index, try await longestWait(for: .seconds(30), every: .milliseconds(50), from: start) { viewer.receivedBytes }) }
                }
                try await Task.sleep(for: .seconds(3))
                await nats.kill(victim)
                var waits = [Duration](repeating: .zero, count: viewers.count)
                for try await (index, wait) in group { waits[index] = wait }
                return waits
            }
            scenario.note("longest viewer wait across the kill: \(waits.max() ?? .zero)")
            for ((label, viewer), wait) in zip(viewers, waits) {
                scenario.check(!viewer.isClosed, "\(label) was disconnected")
                scenario.check(wait < .seconds(1), "\(label): nothing arrived for \(wait) after nats-\(victim + 1) died")
                let flv = try viewer.flv()
                scenario.check(flv.timestampRegressions().isEmpty, "\(label): timestamps go backwards")
            }
            // A relay that lost messages refilled them from the GOP (whether any were lost
            // depends on who reconnected first: the ingest's publishes wait in its reconnect
            // buffer); the waits above are what viewers saw either way.
            for (index, relay) in relays.enumerated() where placement["relay-\(index + 1)"] == victim {
                scenario.note("relay-\(index + 1) lost its server; \(relay.log.contains("refilled") ? "it refilled a gap from the GOP" : "it lost no message")")
            }
            let now = try? await Self.transcoder(of: "abr", "nc", coordinator: coordinator)
            scenario.check(now == owned, "the job moved from \(owned) to \(now ?? "nowhere") when a nats-server died")
            scenario.check(!coordinator.log.contains("is dead"), "the coordinator declared a node dead when a nats-server died")
        }
    }

    @Test("kill -9 of the coordinator while 3 streams play: no viewer stalls; after a restart on the same SQLite file the API shows the same streams and keys")
    func coordinatorCrash() async throws {
        try await Scenario.run("cluster-coordinator-crash") { scenario in
            let media = try await MediaLibrary.shared.file(.gopAudioVideo)
            let nats = try await NATSServerProcess.start(scenario)
            let bus = ["--nats", nats.url]
            let database = scenario.file("coordinator.sqlite").path
            let coordinatorArguments = ["--role", "coordinator", "--node-id", "coordinator", "--admin-token", Self.token, "--database", database] + bus
            var coordinator = try await scenario.startNode(NodeConfig(), label: "coordinator", arguments: coordinatorArguments)
            let ingest = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1), label: "ingest", arguments: ["--role", "ingest", "--node-id", "ingest-1"] + bus)
            let relay = try await scenario.startNode(NodeConfig(), label: "relay", arguments: ["--role", "relay", "--node-id", "relay-1"] + bus)

            let created = try await HTTPClient.request("POST", port: coordinator.adminPort, path: "/api/v1/keys", headers: ["Authorization": "Bearer \(Self.token)"], body: #"{"app":"live","name":"one"}"#)
            scenario.check(created.status == 201, "creating a key answered \(created.status): \(created.bodyText)")
            var viewers: [HTTPFLVViewer] = []
            for name in ["one", "two", "three"] {
                _ = try scenario.publish(media, to: ingest.rtmpURL("live", name), name: "publisher-\(name)", loop: true)
                try await scenario.waitUntilLive(ingest, "live", name)
                viewers.append(try await scenario.openViewer(relay, "live", name))
            }
            let listed = await eventually(timeout: .seconds(5), interval: .milliseconds(250)) {
                let (_, json) = (try? await Self.admin(coordinator, "/api/v1/streams")) ?? (0, [:])
                return (json["streams"] as? [[String: Any]])?.filter { $0["state"] as? String == "live" }.count == 3
            }
            scenario.check(listed, "the coordinator does not list 3 live streams")

            await coordinator.kill()
            // With the coordinator gone, every viewer keeps receiving media.
            for second in 1...3 {
                let before = viewers.map(\.receivedBytes)
                try await Task.sleep(for: .seconds(1))
                for (index, viewer) in viewers.enumerated() {
                    scenario.check(viewer.receivedBytes > before[index] + 5_000, "viewer \(index) stalled in second \(second) without the coordinator")
                }
            }
            coordinator = try await scenario.startNode(NodeConfig(), label: "coordinator-again", arguments: coordinatorArguments)
            var streams: [[String: Any]] = []
            let back = await eventually(timeout: .seconds(8), interval: .milliseconds(250)) {
                let (_, json) = (try? await Self.admin(coordinator, "/api/v1/streams")) ?? (0, [:])
                streams = (json["streams"] as? [[String: Any]] ?? []).filter { $0["state"] as? String == "live" }
                return streams.count == 3
            }
            let names = Set(streams.compactMap { $0["name"] as? String })
            scenario.check(back && names == ["one", "two", "three"], "after the restart the API lists \(names), expected one, two, three")
            let (_, keys) = try await Self.admin(coordinator, "/api/v1/keys")
            let keyList = keys["keys"] as? [[String: Any]] ?? []
            scenario.check(keyList.contains { $0["app"] as? String == "live" && $0["name"] as? String == "one" }, "the stream key is gone after the restart: \(keys)")
            // The nodes register again with their next heartbeat (within a second or two).
            var alive: [String] = []
            let reconciled = await eventually(timeout: .seconds(5), interval: .milliseconds(250)) {
                let (_, nodes) = (try? await Self.admin(coordinator, "/api/v1/nodes")) ?? (0, [:])
                alive = (nodes["nodes"] as? [[String: Any]] ?? []).filter { $0["state"] as? String == "alive" }.compactMap { $0["id"] as? String }
                return Set(alive).isSuperset(of: ["ingest-1", "relay-1"])
            }
            scenario.check(reconciled, "after the restart the live nodes are \(alive)")
            for (index, viewer) in viewers.enumerated() {
                scenario.check(!viewer.isClosed, "viewer \(index) was closed")
            }
        }
    }
}

extension IntegrationTests.ClusterFailoverTests {
    /// A coordinator and an ingest that requires stream keys, on one NATS server, and a key
    /// the coordinator issued for `live/<name>` (its secret and its id).
    static func keyedCluster(
        _ scenario: Scenario, keyFor name: String, ingestArguments: [String] = []
    ) async throws -> (coordinator: NodeProcess, ingest: NodeProcess, key: String, id: Int) {
        let nats = try await NATSServerProcess.start(scenario)
        let bus = ["--nats", nats.url]
        let coordinator = try await scenario.startNode(NodeConfig(), label: "coordinator", arguments: ["--role", "coordinator", "--node-id", "coordinator", "--admin-token", Self.token] + bus)
        var config = NodeConfig(publisherGraceSeconds: 1, requireStreamKeys: true)
        // An SRT handshake's wait with room for a loaded machine (by default a quarter of the latency).
        config.srtHandshakeWaitMilliseconds = 100
        let ingest = try await scenario.startNode(
            config, label: "ingest", arguments: ["--role", "ingest", "--node-id", "ingest-1"] + bus + ingestArguments
        )
        let created = try await HTTPClient.request(
            "POST", port: coordinator.adminPort, path: "/api/v1/keys", headers: ["Authorization": "Bearer \(Self.token)"],
            body: "{\"app\":\"live\",\"name\":\"\(name)\"}"
        )
        let json = (try? JSONSerialization.jsonObject(with: Data(created.bodyText.utf8)) as? [String: Any]) ?? [:]
        guard created.status == 201, let key = json["key"] as? String, !key.isEmpty, let id = json["id"] as? Int else {
            throw IntegrationFailure("creating a key answered \(created.status): \(created.bodyText)")
        }
        return (coordinator, ingest, key, id)
    }

    @Test("Publishing needs a stream key from the coordinator; a verified key keeps working while the coordinator is down, an unverified one does not; over SRT, a wrong key is rejected with 1401 in the first handshake, the coordinator asked over the bus within it")
    func streamKeys() async throws {
        try await Scenario.run("cluster-stream-keys") { scenario in
            let media = try await MediaLibrary.shared.file(.small)
            let srtPort = try await FreePorts.allocate(1)[0]
            let (coordinator, ingest, key, _) = try await Self.keyedCluster(scenario, keyFor: "secure", ingestArguments: ["--srt-port", String(srtPort)])
            let listed = try await HTTPClient.get(port: coordinator.adminPort, path: "/api/v1/keys", headers: ["Authorization": "Bearer \(Self.token)"])
            scenario.check(listed.status == 200 && !listed.bodyText.contains(key), "the key list shows the secret, or fails: \(listed.status)")

            func tryPublish(_ url: String, name: String) async throws -> ToolRun {
                try await scenario.run("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-re", "-i", media.url.path, "-t", "1", "-c", "copy", "-f", "flv", url], name: name, timeout: .seconds(20))
            }
            let base = ingest.rtmpURL("live", "secure")
            let withoutKey = try await tryPublish(base, name: "publish-no-key")
            scenario.check(!withoutKey.succeeded, "publishing without a key succeeded")
            let wrongKey = try await tryPublish(base + "?key=not-the-key", name: "publish-wrong-key")
            scenario.check(!wrongKey.succeeded, "publishing with a wrong key succeeded")
            let rightKey = try await tryPublish(base + "?key=\(key)", name: "publish-right-key")
            scenario.check(rightKey.succeeded, "publishing with the right key failed: \(rightKey)")
            let refusals = ingest.log.components(separatedBy: "publish refused").count - 1
            scenario.check(refusals == 2, "the ingest logged \(refusals) refusals, expected 2")
            // Over SRT: a key the ingest has not seen is asked of the coordinator within the
            // handshake, so a wrong one is rejected with 1401 on its first attempt, and the
            // right one connects.
            let srtWrong = await SRTCaller.rejection(port: srtPort, streamID: "#!::r=live/secure,m=publish,key=also-not-the-key")
            scenario.check(srtWrong == SRT_REJX_UNAUTHORIZED, "an SRT publish with a wrong key: rejection \(srtWrong), expected \(SRT_REJX_UNAUTHORIZED)")
            let srtRight = await SRTCaller.rejection(port: srtPort, streamID: "#!::r=live/secure,m=publish,key=\(key)", hold: .seconds(1))
            scenario.check(srtRight == 0, "an SRT publish with the right key was rejected in the handshake (\(srtRight))")

            // The coordinator goes away: the verified key still works, an unverified one does not.
            await coordinator.kill()
            let cached = try await tryPublish(base + "?key=\(key)", name: "publish-cached-key")
            scenario.check(cached.succeeded, "a verified key was refused while the coordinator was down: \(cached)")
            let unverified = try await tryPublish(ingest.rtmpURL("live", "other") + "?key=\(key)", name: "publish-unverified")
            scenario.check(!unverified.succeeded, "a key never verified for live/other was accepted while the coordinator was down")
            // Over SRT, the verified key still connects; an unverified one is refused, in the
            // handshake if the bus says at once that no coordinator answers, or else after it.
            let srtCached = await SRTCaller.rejection(port: srtPort, streamID: "#!::r=live/secure,m=publish,key=\(key)", hold: .seconds(1))
            scenario.check(srtCached == 0, "an SRT publish with a verified key was rejected while the coordinator was down (\(srtCached))")
            _ = await SRTCaller.rejection(port: srtPort, streamID: "#!::r=live/other2,m=publish,key=\(key)", hold: .seconds(1))
            let unverifiedRefused = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) {
                ingest.log.split(separator: "\n").contains { $0.contains("live/other2") && $0.contains("refused") }
            }
            scenario.check(unverifiedRefused, "an SRT publish with a key never verified for live/other2 was not refused while the coordinator was down")
            let notLive = try await HTTPClient.get(port: ingest.httpPort, path: "/live/other2.flv", timeout: .seconds(2))
            scenario.check(notLive.status == 404, "live/other2 went live with an unverified key: \(notLive.status)")
        }
    }
}

extension IntegrationTests.ClusterFailoverTests {
    @Test("An operator's kick through the admin API disconnects the publisher, who is told why")
    func kick() async throws {
        try await Scenario.run("cluster-kick") { scenario in
            let media = try await MediaLibrary.shared.file(.small)
            let nats = try await NATSServerProcess.start(scenario)
            let bus = ["--nats", nats.url]
            let coordinator = try await scenario.startNode(NodeConfig(), label: "coordinator", arguments: ["--role", "coordinator", "--node-id", "coordinator", "--admin-token", Self.token] + bus)
            let ingest = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1), label: "ingest", arguments: ["--role", "ingest", "--node-id", "ingest-1"] + bus)
            let publisher = try scenario.publish(media, to: ingest.rtmpURL("live", "kicked"), name: "publisher", loop: true)
            try await scenario.waitUntilLive(ingest, "live", "kicked")
            let live = await eventually(timeout: .seconds(5), interval: .milliseconds(250)) {
                let (_, json) = (try? await Self.admin(coordinator, "/api/v1/streams")) ?? (0, [:])
                return (json["streams"] as? [[String: Any]])?.contains { $0["name"] as? String == "kicked" && $0["state"] as? String == "live" } == true
            }
            try scenario.require(live, "the coordinator never listed live/kicked")
            let unauthorized = try await HTTPClient.request("POST", port: coordinator.adminPort, path: "/api/v1/streams/live/kicked/kick")
            scenario.check(unauthorized.status == 401, "a kick without a token answered \(unauthorized.status)")
            scenario.check(publisher.isRunning, "the publisher stopped before the kick")
            let kicked = try await HTTPClient.request("POST", port: coordinator.adminPort, path: "/api/v1/streams/live/kicked/kick", headers: ["Authorization": "Bearer \(Self.token)"])
            scenario.check(kicked.status == 202, "the kick answered \(kicked.status): \(kicked.bodyText)")
            // Delivered with the ingest's next heartbeat (1 s): the publisher's connection closes.
            let exited = await publisher.waitForExit(timeout: .seconds(5))
            scenario.check(exited != nil, "the publisher was still connected 5 s after the kick")
            scenario.check(ingest.log.contains("publisher kicked by the coordinator"), "the ingest did not log the kick")
            // The publisher is told why before the close (ffmpeg prints the server's error).
            scenario.check(publisher.stderrText.contains("kicked through the coordinator's admin API"), "ffmpeg was not told why: \(publisher.stderrText.suffix(300))")
            scenario.check(ingest.log.contains("publisher session ended") && ingest.log.contains("kicked: kicked through the coordinator"), "the ingest's session log does not say why the publisher left")
        }
    }
}

extension IntegrationTests.ClusterFailoverTests {
    @Test("Revoking a stream key through the admin API disconnects its publisher at once, and the key is refused on the next publish (no 60 s cache window)")
    func revokedKey() async throws {
        try await Scenario.run("cluster-revoked-key") { scenario in
            let media = try await MediaLibrary.shared.file(.small)
            let (coordinator, ingest, key, id) = try await Self.keyedCluster(scenario, keyFor: "revoked")
            let authorization = ["Authorization": "Bearer \(Self.token)"]
            let url = ingest.rtmpURL("live", "revoked") + "?key=\(key)"
            let publisher = try scenario.publish(media, to: url, name: "publisher", loop: true)
            try await scenario.waitUntilLive(ingest, "live", "revoked")
            scenario.check(publisher.isRunning, "the publisher with a valid key stopped")

            let revoked = try await HTTPClient.request("DELETE", port: coordinator.adminPort, path: "/api/v1/keys/\(id)", headers: authorization)
            scenario.check(revoked.status == 204, "revoking answered \(revoked.status): \(revoked.bodyText)")
            // Pushed during the request: the publisher is gone well before a heartbeat or the
            // 60 s the ingest trusts a verified key.
            let exited = await publisher.waitForExit(timeout: .seconds(3))
            scenario.check(exited != nil, "the publisher with the revoked key was still connected 3 s after the revocation")
            scenario.check(ingest.log.contains("publisher disconnected: its stream key was revoked"), "the ingest did not log why it disconnected the publisher")

            // Within the cache's 60 s, the same key is refused at once.
            let again = try await scenario.run("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-re", "-i", media.url.path, "-t", "1", "-c", "copy", "-f", "flv", url], name: "publish-revoked", timeout: .seconds(20))
            scenario.check(!again.succeeded, "publishing with the revoked key succeeded")
            let disconnected = try await ingest.metrics().sum("estuary_ingest_revoked_publishers_total", labels: [:])
            scenario.check(disconnected == 1, "the ingest counted \(disconnected) publishers disconnected for a revoked key, expected 1")
        }
    }
}
