import Foundation
import TestSupport
import Testing

extension IntegrationTests.ClusterFailoverTests {
    /// Issue 23, item 4: a drain moves the transcode jobs. SIGTERM with a drain grace on the
    /// busy transcoder: the coordinator places its job on the other one, which takes over at
    /// a source keyframe agreed with the draining node; the draining node then stops the job
    /// without ending the rungs, and exits long before its grace. Viewers of every rendition
    /// watch 40 s across it.
    @Test("SIGTERM drains a transcoder: the other takes its job over at a source keyframe, rung viewers on the relay see no gap over 500 ms and one continuous timeline for 40 s, and the drained node exits before its grace")
    func aDrainHandsTheJobOver() async throws {
        try await Scenario.run("cluster-drain-handover") { scenario in
            let media = try await MediaLibrary.shared.file(.gopAudioVideo)
            let nats = try await NATSServerProcess.start(scenario)
            let bus = ["--nats", nats.url]
            let coordinator = try await scenario.startNode(NodeConfig(), label: "coordinator", arguments: ["--role", "coordinator", "--node-id", "coordinator", "--admin-token", Self.token] + bus)
            let ingest = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1), label: "ingest", arguments: ["--role", "ingest", "--node-id", "ingest-1"] + bus)
            var transcoders: [NodeProcess] = []
            for index in 1...2 {
                transcoders.append(try await scenario.startNode(NodeConfig(drainGraceSeconds: 30), label: "transcode\(index)", arguments: ["--role", "transcode", "--node-id", "transcode-\(index)"] + bus))
            }
            let relay = try await scenario.startNode(NodeConfig(), label: "relay", arguments: ["--role", "relay", "--node-id", "relay-1"] + bus)
            _ = try scenario.publish(media, to: ingest.rtmpURL("abr", "hand"), name: "publisher", loop: true)
            try await scenario.waitUntilLive(relay, "abr", "hand/240p", timeout: .seconds(20))
            var viewers: [(label: String, viewer: HTTPFLVViewer)] = []
            for (name, count) in [("hand", 1), ("hand/360p", 3), ("hand/240p", 3)] {
                for index in 1...count {
                    viewers.append(("\(name) #\(index)", try await scenario.openViewer(relay, "abr", name)))
                }
            }
            for (label, viewer) in viewers {
                try scenario.require(await viewer.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(10)), "\(label) got no media")
            }
            let (owner, index) = try await Self.owner(of: "abr", "hand", coordinator: coordinator)
            let survivor = ["transcode-1", "transcode-2"][1 - index]
            let drained = transcoders[index]

            let drainStart = ContinuousClock.now
            var exitedAfter: Duration?
            let waits = try await withThrowingTaskGroup(of: (Int, Duration).self) { group in
                for (index, entry) in viewers.enumerated() {
                    let viewer = entry.viewer
                    let start = viewer.receivedBytes
                    group.addTask { (index, try await longestWait(for: .seconds(40), every: .milliseconds(50), from: start) { viewer.receivedBytes }) }
                }
                try await Task.sleep(for: .seconds(10))
                drained.terminate()
                if await drained.process.waitForExit(timeout: .seconds(25)) != nil {
                    exitedAfter = ContinuousClock.now - drainStart - .seconds(10)
                }
                var waits = [Duration](repeating: .zero, count: viewers.count)
                for try await (index, wait) in group { waits[index] = wait }
                return waits
            }
            let exited = exitedAfter.map { "\($0)" } ?? "not within 25 s"
            scenario.note("\(owner) drained: exited after \(exited); longest viewer wait \(waits.max() ?? .zero)")
            scenario.check(exitedAfter.map { $0 < .seconds(15) } ?? false, "the drained \(owner) did not exit within 15 s (grace 30 s): \(exited)")
            scenario.check(drained.log.contains("handed the transcode job over at a source keyframe"), "\(owner) did not hand its job over")
            let survivorLog = transcoders[1 - index].log
            scenario.check(survivorLog.contains("taking the transcode job over at the first source keyframe"), "\(survivor) did not take the job over at an agreed keyframe")
            let moved = await eventually(timeout: .seconds(3), interval: .milliseconds(200)) {
                (try? await Self.transcoder(of: "abr", "hand", coordinator: coordinator)) == survivor
            }
            scenario.check(moved, "the coordinator does not show the job on \(survivor)")
            scenario.check(!coordinator.log.contains("Node \(owner) is dead"), "the coordinator declared \(owner) dead: it drained and exited")
            // Its exit is recorded as a departure, not a death (no page for a rolling restart).
            var state = "?"
            let left = await eventually(timeout: .seconds(3), interval: .milliseconds(200)) {
                let (_, nodes) = (try? await Self.admin(coordinator, "/api/v1/nodes")) ?? (0, [:])
                state = (nodes["nodes"] as? [[String: Any]] ?? []).first { $0["id"] as? String == owner }?["state"] as? String ?? "?"
                return state == "left"
            }
            scenario.check(left && coordinator.log.contains("Node \(owner) left"), "the coordinator lists the drained \(owner) as \(state), not left")
            let deaths = (try? await coordinator.metrics().sum("estuary_coordinator_dead_nodes_total")) ?? -1
            scenario.check(deaths == 0, "the coordinator counted \(deaths) dead nodes")
            scenario.check(!relay.log.contains("its publisher ended it"), "a rendition ended on the relay during the handover")

            for ((label, viewer), wait) in zip(viewers, waits) {
                scenario.check(!viewer.isClosed, "\(label) was disconnected")
                scenario.check(wait < .milliseconds(500), "\(label): nothing arrived for \(wait) across the handover")
                let flv = try viewer.flv()
                scenario.check(flv.timestampRegressions().isEmpty, "\(label): timestamps go backwards \(flv.timestampRegressions().prefix(3))")
                let video = flv.videoFrames.map { Int64($0.timestamp) }
                let largestStep = zip(video, video.dropFirst()).map { $1 - $0 }.max() ?? 0
                // 30 fps: one frame is 33 ms; a handover that lost frames would show here.
                scenario.check(largestStep <= 100, "\(label): the video timeline jumps by \(largestStep) ms")
                scenario.check(video.count >= 1100, "\(label): \(video.count) video frames in 40 s")
                let recording = scenario.file("drain-\(label.replacingOccurrences(of: "/", with: "-").replacingOccurrences(of: " ", with: "").replacingOccurrences(of: "#", with: "")).flv")
                try Data(try viewer.response().body).write(to: recording)
                let decoded = try await scenario.decodeWithFFmpeg(recording.path, name: "decode-\(index)")
                scenario.check(decoded.succeeded && decoded.stderr.isEmpty, "\(label): the stream across the handover does not decode cleanly: \(decoded.stderr.prefix(600))")
            }
        }
    }

    /// A drained ingest's publishers go to the ingest it names; the cluster's one-publisher
    /// rule must let them in there while they still publish here (a draining ingest yields).
    @Test("A drained ingest's Enhanced RTMP v2 publisher moves to the other ingest: admitted there while it still publishes on the first (a draining ingest yields its publishers to the one-publisher check), on the first one's timeline; the relay's viewer stays 34 s, timestamps forward, nothing re-based")
    func aDrainedIngestsPublisherMovesToTheOther() async throws {
        try await Scenario.run("cluster-drain-ingest") { scenario in
            let media = try await MediaLibrary.shared.file(.gopAudioVideo)
            let (first, second, relay) = try await IntegrationTests.ClusterTests.startTwoIngests(
                scenario, first: NodeConfig(publisherGraceSeconds: 5, drainGraceSeconds: 30), firstArguments: ["--admin-token", Self.token]
            )
            let publisher = try MovingPublisher(file: media.url, app: "live", name: "moving")
            scenario.atTearDown { publisher.stop() }
            let publishing = Task { await publisher.run(port: first.rtmpPort, loops: 5, scenario: scenario) }
            try await scenario.waitUntilLive(relay, "live", "moving", timeout: .seconds(20))
            let viewer = try await scenario.openViewer(relay, "live", "moving")
            let opened = ContinuousClock.now
            try await Task.sleep(for: .seconds(4))

            // The publisher opens its new connection before it closes the old one: the first
            // ingest, draining, yields the stream to it.
            first.expectExit()
            let drain = try await HTTPClient.request(
                "POST", port: first.adminPort, path: "/api/v1/node/drain", headers: ["Authorization": "Bearer \(Self.token)"],
                body: #"{"reconnectTo": "\#(second.rtmpBase)"}"#
            )
            scenario.check(drain.status == 202, "POST /api/v1/node/drain answered \(drain.status): \(drain.bodyText)")
            let moved = await eventually(timeout: .seconds(10), interval: .milliseconds(100)) { !publisher.report.moves.isEmpty }
            try scenario.require(moved, "the publisher did not move within 10 s: \(publisher.report)")
            try await scenario.waitUntilLive(second, "live", "moving", timeout: .seconds(10))
            scenario.check(first.log.contains("a publisher of the stream on another ingest took it over"), "the draining ingest did not yield its publisher")
            scenario.check(second.log.contains("continuing the timeline of another node's publication"), "the second ingest did not continue the first one's timeline")

            try await Task.sleep(until: opened + .seconds(34), clock: .continuous)
            try await IntegrationTests.ClusterTests.checkOneTimeline(scenario, viewer, relay: relay, span: 30_000, maxStep: 1000)
            scenario.check(publisher.report.failure == nil, "the publisher failed: \(publisher.report.failure ?? "")")
            publisher.stop()
            _ = await publishing.value
        }
    }
}
