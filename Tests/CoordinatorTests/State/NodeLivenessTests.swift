import Cluster
import Foundation
import Synchronization
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

    /// A node that says it leaves (the end of a drain, a signal) is recorded as left, not
    /// dead: its streams end and its jobs move as for a death, at once, without a probe, and
    /// it is alive again when it registers.
    @Test func aNodeThatLeavesIsRecordedAsLeftNotDead() async throws {
        let fixture = try await CoordinatorFixture()
        let clock = LeaseTableTests.UptimeClock()
        let leases = LeaseTable(settings: .init(), clock: { clock.nanoseconds.load(ordering: .relaxed) })
        let probed = Mutex<[String]>([])
        await fixture.state.setLiveness(.init(leases: leases) { nodeID in
            probed.withLock { $0.append(nodeID) }
            return true
        })
        try await fixture.register("ingest-1", .ingest)
        try await fixture.register("ingest-2", .ingest)
        try await fixture.state.streamStarted(StreamStart(app: "show", name: "cam", ingestNode: "ingest-1", facts: .sample))
        leases.beat("ingest-1")
        leases.beat("ingest-2")
        leases.leave("ingest-1")
        clock.advance(milliseconds: 50)
        let departures = await fixture.state.judgeLeases()
        #expect(departures == .init(gone: [], left: ["ingest-1"]))
        try await fixture.state.sweep(gone: departures.gone, left: departures.left)

        let nodes = try await fixture.state.nodes()
        #expect(nodes.first { $0.id == "ingest-1" }?.state == "left")
        #expect(nodes.first { $0.id == "ingest-2" }?.state == "alive")
        #expect(try await fixture.state.liveStreams().isEmpty, "the stream of a node that left ends")
        let events = try await fixture.state.events()
        #expect(events.contains { $0.kind == "node.left" && $0.subject == "ingest-1" })
        #expect(!events.contains { $0.kind == "node.dead" })
        #expect(events.contains { $0.kind == "stream.ended" && $0.subject == "show/cam" && $0.detail == "ingest ingest-1 left" })
        #expect(probed.withLock { $0 }.isEmpty)
        #expect(await fixture.state.judgeLeases() == .init(), "a departure is taken once")
        // A heartbeat it sent before its word, answered after: it stays left, asked to register.
        #expect(try await fixture.state.heartbeat(nodeID: "ingest-1", load: 0, streams: []).instructions == [.register])
        #expect(try await fixture.state.nodes().first { $0.id == "ingest-1" }?.state == "left")

        // It comes back (a restart under the same id): alive again.
        try await fixture.register("ingest-1", .ingest)
        #expect(try await fixture.state.nodes().first { $0.id == "ingest-1" }?.state == "alive")
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
