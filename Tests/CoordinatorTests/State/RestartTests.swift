import Cluster
import Foundation
import Testing

@testable import Coordinator

/// A coordinator closed and reopened from its file: the same nodes, streams and keys,
/// reconciled with the nodes that come back.
struct RestartTests {
    @Test func nodesStreamsAndKeysAreBackAfterAReopen() async throws {
        let fixture = try await CoordinatorFixture()
        try await fixture.register("ingest-1", .ingest)
        try await fixture.register("tc-1", .transcode)
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam", ingestNode: "ingest-1", facts: .sample))
        let key = try await fixture.state.createStreamKey(app: "live", name: "cam")
        let streamsBefore = try await fixture.state.liveStreams()

        try await fixture.reopen()
        #expect(try await fixture.state.nodes().map(\.id) == ["ingest-1", "tc-1"])
        #expect(try await fixture.state.nodes().allSatisfy { $0.state == "alive" })
        #expect(try await fixture.state.liveStreams() == streamsBefore)
        #expect(try await fixture.state.streamKeys().map(\.id) == [key.id])
        #expect(try await fixture.state.verifyStreamKey(app: "live", name: "cam", key: key.key))
        try await fixture.close()
    }

    @Test func staleNodesAreDeadAtLoadAndReconciledWhenTheyHeartbeat() async throws {
        let fixture = try await CoordinatorFixture()
        try await fixture.register("ingest-1", .ingest)
        try await fixture.register("tc-1", .transcode)
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam", ingestNode: "ingest-1", facts: .sample))
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "gone", ingestNode: "ingest-1"))

        // The coordinator is down for 10 s; the nodes kept running.
        try await fixture.close()
        fixture.clock.advance(by: 10)
        try await fixture.reopen()
        #expect(try await fixture.state.nodes().allSatisfy { $0.state == "dead" })
        // Their streams and jobs are left alone while they may still heartbeat.
        #expect(try await fixture.state.sweep().isEmpty)
        #expect(try await fixture.state.liveStreams().count == 2)

        // The ingest comes back publishing only `cam` (and a stream the file never saw).
        let reports: [StreamReport] = [
            .publishing(app: "live", name: "cam", facts: .sample, bytes: 5000),
            .publishing(app: "live", name: "new", facts: .sample, bytes: 10),
        ]
        #expect(try await fixture.state.heartbeat(nodeID: "ingest-1", load: 0, streams: reports).instructions.isEmpty)
        #expect(try await fixture.state.liveStreams().map(\.name) == ["cam", "new"])
        #expect(try await fixture.state.liveStreams().first?.bytes == 5000)

        // `gone` ended with the ingest's report; `new` found no alive transcoder.
        #expect(try await fixture.state.lookup(app: "live", name: "new")?.renditions.allSatisfy { $0.state == .unplaced } == true)

        // The transcoder does not come back in time: its job is moved (nowhere: unplaced).
        fixture.clock.advance(by: 3.5)
        _ = try await fixture.state.heartbeat(nodeID: "ingest-1", load: 0, streams: reports)
        let moves = try await fixture.state.sweep()
        #expect(moves == [TranscodeMove(app: "live", name: "cam", from: "tc-1", to: nil)])
        #expect(try await fixture.state.nodes().first { $0.id == "ingest-1" }?.state == "alive")
        try await fixture.close()
    }

    @Test func anIngestThatNeverComesBackHasItsStreamsEnded() async throws {
        let fixture = try await CoordinatorFixture()
        try await fixture.register("ingest-1", .ingest)
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam", ingestNode: "ingest-1"))
        try await fixture.close()
        fixture.clock.advance(by: 60)
        try await fixture.reopen()
        #expect(try await fixture.state.liveStreams().count == 1)
        fixture.clock.advance(by: 3)
        try await fixture.state.sweep()
        #expect(try await fixture.state.liveStreams().isEmpty)
        try await fixture.close()
    }
}
