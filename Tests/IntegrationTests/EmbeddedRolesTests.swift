import Foundation
import TestSupport
import Testing

extension IntegrationTests {
    /// `estuary` without `--role` or `--nats`: every role in one process over the in-process
    /// bus, with the coordinator's state in a SQLite file, as `make run` starts it.
    @Suite("Every role in one process")
    struct EmbeddedRolesTests {
        static let token = "embedded-admin-token"

        static func admin(_ node: NodeProcess, _ path: String) async throws -> (Int, [String: Any]) {
            try await node.admin(path, token: Self.token)
        }

        @Test("The default node runs the coordinator on <data-dir>/estuary.sqlite: its admin API lists an abr stream with every rung placed on the node itself, the node's live view shows the publisher's facts and the job, and a kick disconnects the publisher")
        func coordinatorInTheEmbeddedNode() async throws {
            try await Scenario.run("embedded-roles") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1), arguments: ["--node-id", "solo", "--admin-token", Self.token])
                let database = try FileManager.default.contentsOfDirectory(at: scenario.directory, includingPropertiesForKeys: nil)
                    .filter { $0.lastPathComponent.hasPrefix("node-data-") }
                    .map { $0.appendingPathComponent("estuary.sqlite") }
                    .filter { FileManager.default.fileExists(atPath: $0.path) }
                scenario.check(database.count == 1, "expected the coordinator's SQLite file in the node's data directory, found \(database.map(\.path))")

                let publisher = try scenario.publish(media, to: node.rtmpURL("abr", "solo"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(node, "abr", "solo")
                try await scenario.waitUntilLive(node, "abr", "solo_240p", timeout: .seconds(15))

                // The coordinator placed the job on this node's transcoder; the rungs a 360p source
                // has run, at their size, and the ladder's taller ones are skipped.
                var stream: [String: Any] = [:]
                let placed = await eventually(timeout: .seconds(10), interval: .milliseconds(250)) {
                    let (_, json) = (try? await Self.admin(node, "/api/v1/streams")) ?? (0, [:])
                    let streams = json["streams"] as? [[String: Any]] ?? []
                    guard let found = streams.first(where: { $0["app"] as? String == "abr" && $0["name"] as? String == "solo" }) else { return false }
                    stream = found
                    let renditions = found["renditions"] as? [[String: Any]] ?? []
                    let states = Dictionary(renditions.map { ($0["rung"] as? String ?? "?", "\($0["state"] as? String ?? "?") \($0["width"] as? Int ?? -1)") }, uniquingKeysWith: { first, _ in first })
                    return renditions.allSatisfy { $0["transcoderNode"] as? String == "solo" }
                        && states == ["720p": "skipped 0", "480p": "skipped 0", "360p": "running 640", "240p": "running 426"]
                }
                scenario.check(placed, "the admin API does not show the rungs of abr/solo on node solo (360p and 240p running, 720p and 480p skipped): \(stream)")
                scenario.check(stream["ingestNode"] as? String == "solo", "the stream's ingest is \(stream["ingestNode"] ?? "absent")")
                let listed = (try? await Self.admin(node, "/api/v1/streams"))?.1["streams"] as? [[String: Any]] ?? []
                scenario.check(listed.count == 1, "the rungs must not be listed as streams of their own (nor transcoded again): \(listed.map { $0["name"] ?? "?" })")

                // The node's live view: what its ingest, transcoder and relay actors say now.
                let (status, view) = try await Self.admin(node, "/api/v1/nodes/solo/streams")
                scenario.check(status == 200, "GET /api/v1/nodes/solo/streams answered \(status)")
                let entries = view["streams"] as? [[String: Any]] ?? []
                let source = entries.first { $0["app"] as? String == "abr" && $0["name"] as? String == "solo" }
                let facts = source?["publishing"] as? [String: Any]
                scenario.check(facts?["videoCodec"] as? String == "h264" && facts?["width"] as? Int == 640, "the live view does not describe the publisher: \(source ?? [:])")
                scenario.check((source?["rungs"] as? [String])?.contains("240p") == true, "the live view does not show the transcode job: \(source ?? [:])")
                scenario.check(entries.count == 1, "the rungs' hubs count for their source, not as streams of their own: \(entries.map { $0["name"] ?? "?" })")
                // Viewers are players only: the live view counts what the node's HTTP-FLV
                // gauge counts (no RTMP players here), not the HLS segmenters, the
                // transcoder's feed or the bus forwarding, which also subscribe to the hubs.
                var baseline = -1
                var gauge = -1.0
                let consistent = await eventually(timeout: .seconds(5), interval: .milliseconds(200)) {
                    let (_, json) = (try? await Self.admin(node, "/api/v1/nodes/solo/streams")) ?? (0, [:])
                    baseline = ((json["streams"] as? [[String: Any]])?.first { $0["name"] as? String == "solo" }?["viewers"] as? Int) ?? -1
                    gauge = (try? await node.metrics().sum("estuary_httpflv_viewers", labels: [:])) ?? -1
                    return baseline >= 0 && Double(baseline) == gauge
                }
                scenario.check(consistent, "the live view counts \(baseline) viewers, the HTTP-FLV gauge \(gauge)")
                // Two more players, one of the source and one of a rung: both count for the stream.
                let (sourceViewer, _) = try await HTTPClient.openStream(port: node.httpPort, path: "/abr/solo.flv")
                let (rungViewer, _) = try await HTTPClient.openStream(port: node.httpPort, path: "/abr/solo_240p.flv")
                scenario.track(sourceViewer)
                scenario.track(rungViewer)
                var totalViewers: Int?
                let counted = await eventually(timeout: .seconds(5), interval: .milliseconds(250)) {
                    let (_, json) = (try? await Self.admin(node, "/api/v1/streams")) ?? (0, [:])
                    let streams = json["streams"] as? [[String: Any]] ?? []
                    totalViewers = streams.first { $0["name"] as? String == "solo" }?["totalViewers"] as? Int
                    return totalViewers == baseline + 2
                }
                scenario.check(counted, "expected \(baseline + 2) viewers of abr/solo (2 more players, of the source and of a rung), the API says \(totalViewers.map(String.init) ?? "nothing")")

                let (unknown, _) = try await Self.admin(node, "/api/v1/nodes/nobody/streams")
                scenario.check(unknown == 404, "an unknown node answered \(unknown)")

                let kicked = try await HTTPClient.request("POST", port: node.adminPort, path: "/api/v1/streams/abr/solo/kick", headers: ["Authorization": "Bearer \(Self.token)"])
                scenario.check(kicked.status == 202, "the kick answered \(kicked.status): \(kicked.bodyText)")
                let exited = await publisher.waitForExit(timeout: .seconds(5))
                scenario.check(exited != nil, "the publisher was still connected 5 s after the kick")
                scenario.check(node.log.contains("publisher kicked by the coordinator"), "the node did not log the kick")
            }
        }

        @Test("An abr publisher killed and reconnected within the grace period keeps its session and its rungs: a rung viewer stays connected and gets the new publisher's frames")
        func rungsSurviveAPublisherReconnect() async throws {
            try await Scenario.run("embedded-reconnect") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 8), arguments: ["--node-id", "solo", "--admin-token", Self.token])
                let first = try scenario.publish(media, to: node.rtmpURL("abr", "re"), name: "publisher-1", loop: true)
                try await scenario.waitUntilLive(node, "abr", "re_240p", timeout: .seconds(15))
                let viewer = try await scenario.openViewer(node, "abr", "re_240p")
                try scenario.require(await viewer.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(10)), "the rung viewer got no media")
                let session = try await Self.sessionID(of: "re", node)

                first.send(signal: SIGKILL)
                _ = await first.waitForExit(timeout: .seconds(3))
                // Longer than two heartbeats: the coordinator hears about the stream while no
                // publisher is attached, and must not end its session (or stop its rungs).
                try await Task.sleep(for: .seconds(3))
                scenario.check(!viewer.isClosed, "the rung viewer was disconnected while the publisher was away (grace is 8 s)")
                let atReconnect = viewer.receivedBytes
                _ = try scenario.publish(media, to: node.rtmpURL("abr", "re"), name: "publisher-2", loop: true)
                let resumed = await viewer.waitForProgress(beyond: atReconnect, bytes: 20_000, timeout: .seconds(10))
                scenario.check(resumed && !viewer.isClosed, "the rung viewer got no media from the reconnected publisher (closed: \(viewer.isClosed))")
                let after = try await Self.sessionID(of: "re", node)
                scenario.check(after == session, "the reconnect started a new session: \(session.map(String.init) ?? "none") → \(after.map(String.init) ?? "none")")
                let flv = try viewer.flv()
                scenario.check(flv.error == nil && flv.timestampRegressions().isEmpty, "the rung viewer's FLV: \(flv.error ?? "") regressions \(flv.timestampRegressions().prefix(3).map { "\($0.previous)->\($0.next)" })")
            }
        }

        /// The id of the live session of `abr/name` in the admin API.
        static func sessionID(of name: String, _ node: NodeProcess) async throws -> Int? {
            let (_, json) = try await Self.admin(node, "/api/v1/streams")
            let streams = json["streams"] as? [[String: Any]] ?? []
            return streams.first { $0["name"] as? String == name && $0["state"] as? String == "live" }?["id"] as? Int
        }
    }
}
