import Cluster
import Foundation
import Testing

@testable import Coordinator

/// Registration, heartbeats and the 3 s dead-node threshold, on a manual clock.
struct NodeLivenessTests {
    @Test func aNodeSilentForThreeSecondsIsDead() async throws {
        let fixture = try await CoordinatorFixture()
        let reply = try await fixture.register("relay-1", .relay)
        #expect(reply.instructions.isEmpty)
        #expect(reply.deadAfter == .seconds(3))

        fixture.clock.advance(by: 2)
        _ = try await fixture.state.heartbeat(nodeID: "relay-1", load: 0.5, streams: [])
        fixture.clock.advance(by: 2.9)
        try await fixture.state.sweep()
        var node = try #require(try await fixture.state.nodes().first)
        #expect(node.state == "alive")
        #expect(node.load == 0.5)

        fixture.clock.advance(by: 0.2)
        try await fixture.state.sweep()
        node = try #require(try await fixture.state.nodes().first)
        #expect(node.state == "dead")
        #expect(try await fixture.state.events().contains { $0.kind == "node.dead" && $0.subject == "relay-1" })
        try await fixture.close()
    }

    @Test func aDeadNodeThatHeartbeatsIsAliveAgain() async throws {
        let fixture = try await CoordinatorFixture()
        try await fixture.register("relay-1", .relay)
        fixture.clock.advance(by: 10)
        try await fixture.state.sweep()
        #expect(try await fixture.state.nodes().first?.state == "dead")
        let reply = try await fixture.state.heartbeat(nodeID: "relay-1", load: 0, streams: [])
        #expect(reply.instructions.isEmpty)
        #expect(try await fixture.state.nodes().first?.state == "alive")
        #expect(try await fixture.state.events().first?.kind == "node.revived")
        try await fixture.close()
    }

    @Test func anUnknownNodeIsAskedToRegister() async throws {
        let fixture = try await CoordinatorFixture()
        let reply = try await fixture.state.heartbeat(nodeID: "stranger", load: 0, streams: [])
        #expect(reply.instructions == [.register])
        #expect(try await fixture.state.nodes().isEmpty)
        try await fixture.close()
    }

    @Test func nodeIDsMustBeSubjectTokens() async throws {
        let fixture = try await CoordinatorFixture()
        await #expect(throws: CoordinatorError.invalidNodeID("a.b")) {
            try await fixture.register("a.b", .relay)
        }
        try await fixture.close()
    }

    @Test func relaysReportViewersAndADeadRelaysViewersAreForgotten() async throws {
        let fixture = try await CoordinatorFixture()
        try await fixture.register("ingest-1", .ingest)
        try await fixture.register("relay-1", .relay)
        try await fixture.register("relay-2", .relay)
        try await fixture.state.streamStarted(StreamStart(app: "show", name: "cam", ingestNode: "ingest-1", facts: .sample))
        _ = try await fixture.state.heartbeat(nodeID: "relay-1", load: 0, streams: [.playing(app: "show", name: "cam", viewers: 3)])
        _ = try await fixture.state.heartbeat(nodeID: "relay-2", load: 0, streams: [.playing(app: "show", name: "cam", viewers: 4)])
        var stream = try #require(try await fixture.state.liveStreams().first)
        #expect(stream.viewers == ["relay-1": 3, "relay-2": 4])
        #expect(stream.totalViewers == 7)
        #expect(stream.facts == .sample)

        fixture.clock.advance(by: 2)
        _ = try await fixture.state.heartbeat(nodeID: "ingest-1", load: 0, streams: [.publishing(app: "show", name: "cam", facts: .sample, bytes: 1000)])
        _ = try await fixture.state.heartbeat(nodeID: "relay-1", load: 0, streams: [.playing(app: "show", name: "cam", viewers: 5)])
        fixture.clock.advance(by: 1.5)
        try await fixture.state.sweep()
        stream = try #require(try await fixture.state.liveStreams().first)
        #expect(stream.viewers == ["relay-1": 5])
        #expect(stream.bytes == 1000)
        #expect(stream.uptimeSeconds == 3.5)
        try await fixture.close()
    }
}
