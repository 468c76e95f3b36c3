import Foundation
import Testing

extension IntegrationTests {
    /// Edges that join a cluster: registered with the coordinator (`EdgeNode`), pulling from
    /// the cluster's relays over HTTP-FLV or from its bus (`estuary://`).
    @Suite("Edges in a cluster")
    struct EdgeClusterTests {
        static let token = "edge-cluster-secret"

        @Test("An edge of two relays fails over between them when the one it pulls from dies (viewer continuous, gap < 3 s); an estuary:// edge pulls over the bus; the coordinator lists both edges and what each pulls from where")
        func edgesInACluster() async throws {
            try await Scenario.run("edge-cluster") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let nats = try await NATSServerProcess.start(scenario)
                let bus = ["--nats", nats.url]
                let coordinator = try await scenario.startNode(NodeConfig(), label: "coordinator", arguments: ["--role", "coordinator", "--node-id", "coordinator", "--admin-token", Self.token] + bus)
                let ingest = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1), label: "ingest", arguments: ["--role", "ingest", "--node-id", "ingest-1"] + bus)
                let relay1 = try await scenario.startNode(NodeConfig(), label: "relay1", arguments: ["--role", "relay", "--node-id", "relay-1"] + bus)
                let relay2 = try await scenario.startNode(NodeConfig(), label: "relay2", arguments: ["--role", "relay", "--node-id", "relay-2"] + bus)
                let httpEdge = try await scenario.startNode(
                    NodeConfig(), label: "edge-http",
                    arguments: ["--role", "edge", "--node-id", "edge-http", "--upstream", "\(relay1.httpBase),\(relay2.httpBase)"] + bus
                )
                let busEdge = try await scenario.startNode(
                    NodeConfig(), label: "edge-bus", arguments: ["--role", "edge", "--node-id", "edge-bus", "--upstream", "estuary://cluster"] + bus
                )
                _ = try scenario.publish(media, to: ingest.rtmpURL("live", "cam"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(ingest, "live", "cam")
                try await scenario.waitUntilLive(httpEdge, "live", "cam", timeout: .seconds(15))
                let viewer = try await scenario.openViewer(httpEdge, "live", "cam")
                let busViewer = try await scenario.openViewer(busEdge, "live", "cam")
                try scenario.require(await viewer.waitForProgress(beyond: 0, bytes: 100_000, timeout: .seconds(10)), "the HTTP edge's viewer received nothing")
                try scenario.require(await busViewer.waitForProgress(beyond: 0, bytes: 100_000, timeout: .seconds(10)), "the estuary:// edge's viewer received nothing")

                // The coordinator knows both edges, and what each pulls from where.
                let listed = await eventually(timeout: .seconds(10), interval: .milliseconds(250)) {
                    guard let (status, body) = try? await coordinator.admin("/api/v1/nodes", token: Self.token), status == 200,
                          let nodes = body["nodes"] as? [[String: Any]] else { return false }
                    let edges = nodes.filter { $0["role"] as? String == "edge" }.compactMap { $0["id"] as? String }
                    return Set(edges) == ["edge-http", "edge-bus"]
                }
                scenario.check(listed, "GET /api/v1/nodes does not list both edges with role edge")
                let (status, pulls) = try await coordinator.admin("/api/v1/nodes/edge-http/streams", token: Self.token)
                let stream = (pulls["streams"] as? [[String: Any]])?.first { $0["name"] as? String == "cam" }
                scenario.check(status == 200 && stream?["upstream"] as? String == relay1.httpBase && (stream?["viewers"] as? Int ?? 0) >= 1,
                               "GET /api/v1/nodes/edge-http/streams: \(status) \(pulls)")
                let (_, busPulls) = try await coordinator.admin("/api/v1/nodes/edge-bus/streams", token: Self.token)
                let busStream = (busPulls["streams"] as? [[String: Any]])?.first { $0["name"] as? String == "cam" }
                scenario.check(busStream?["upstream"] as? String == "estuary://cluster", "GET /api/v1/nodes/edge-bus/streams: \(busPulls)")

                // The relay the edge pulls from dies: the edge moves to the other relay.
                let before = try viewer.flv().videoFrames.count
                await relay1.kill()
                let longestStall = try await longestWait(for: .seconds(6), every: .milliseconds(50), from: before) {
                    try viewer.flv().videoFrames.count
                }
                scenario.note("longest wait for a video frame after relay-1 died: \(longestStall)")
                scenario.check(longestStall < .seconds(3), "the edge's viewer saw no video for \(longestStall) after relay-1 died (target < 3 s)")
                scenario.check(!viewer.connection.isClosed, "the edge's viewer was disconnected by the failover")
                let flv = try viewer.flv()
                scenario.check(flv.error == nil, "the edge's HTTP-FLV is not valid FLV: \(flv.error ?? "")")
                scenario.checkContinuousTimeline(flv, "the HTTP edge's viewer")
                let moved = await eventually(timeout: .seconds(5), interval: .milliseconds(250)) {
                    guard let (_, body) = try? await coordinator.admin("/api/v1/nodes/edge-http/streams", token: Self.token) else { return false }
                    return (body["streams"] as? [[String: Any]])?.first?["upstream"] as? String == relay2.httpBase
                }
                scenario.check(moved, "the coordinator does not show the edge pulling from relay-2 after the failover")
                let failovers = try await httpEdge.metrics().sum("estuary_edge_failovers_total")
                scenario.check(failovers >= 1, "estuary_edge_failovers_total = \(failovers)")
                let busFLV = try busViewer.flv()
                scenario.check(busFLV.error == nil && busFLV.timestampRegressions().isEmpty, "the estuary:// edge's viewer: \(busFLV.error ?? "timestamps go backwards")")
                scenario.check(busFLV.videoFrames.count >= 60, "the estuary:// edge's viewer got \(busFLV.videoFrames.count) video frames")
            }
        }
    }
}
