import Cluster
import Foundation
import Testing

@testable import Coordinator

/// Transcode jobs: placed on the least-loaded transcoder, moved when it dies, delivered
/// through heartbeat instructions.
struct PlacementTests {
    @Test func aJobGoesToTheLeastLoadedAliveTranscoder() async throws {
        let fixture = try await CoordinatorFixture()
        try await fixture.register("ingest-1", .ingest)
        try await fixture.register("tc-1", .transcode)
        try await fixture.register("tc-2", .transcode)
        _ = try await fixture.state.heartbeat(nodeID: "tc-1", load: 0.8, streams: [])
        _ = try await fixture.state.heartbeat(nodeID: "tc-2", load: 0.2, streams: [])
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam", ingestNode: "ingest-1", facts: .sample))

        let location = try #require(try await fixture.state.lookup(app: "live", name: "cam"))
        #expect(location.ingestNode == "ingest-1")
        #expect(location.ingestHost == "ingest-1.local")
        #expect(location.renditions.map(\.rung.name) == ["720p", "480p"])
        #expect(location.renditions.allSatisfy { $0.transcoderNode == "tc-2" && $0.state == .assigned })

        // tc-2 learns of the job with its heartbeat, and reports it running with the next.
        let assignment = TranscodeAssignment(app: "live", name: "cam", ingestNode: "ingest-1", rungs: CoordinatorFixture.ladder)
        #expect(try await fixture.state.heartbeat(nodeID: "tc-2", load: 0.2, streams: []).instructions == [.transcode(assignment)])
        #expect(try await fixture.state.heartbeat(nodeID: "tc-1", load: 0.8, streams: []).instructions.isEmpty)
        let running = [StreamReport.transcoding(app: "live", name: "cam", rungs: ["720p", "480p"])]
        #expect(try await fixture.state.heartbeat(nodeID: "tc-2", load: 0.5, streams: running).instructions.isEmpty)
        #expect(try await fixture.state.lookup(app: "live", name: "cam")?.renditions.allSatisfy { $0.state == .running } == true)

        // Equal loads: the transcoder with fewer jobs takes the next one.
        _ = try await fixture.state.heartbeat(nodeID: "tc-1", load: 0.5, streams: [])
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam2", ingestNode: "ingest-1"))
        #expect(try await fixture.state.lookup(app: "live", name: "cam2")?.renditions.first?.transcoderNode == "tc-1")

        // Apps without a ladder get no job.
        try await fixture.state.streamStarted(StreamStart(app: "plain", name: "cam", ingestNode: "ingest-1"))
        #expect(try await fixture.state.lookup(app: "plain", name: "cam")?.renditions == [])
        try await fixture.close()
    }

    @Test func equalLoadsGoToTheTranscoderAssignedFewerRungs() async throws {
        let rung = { (name: String) in RungSpec(name: name, width: 0, height: 240, bitRate: 400_000) }
        let fixture = try await CoordinatorFixture(configuration: CoordinatorConfiguration(ladders: [
            "four": ["a", "b", "c", "d"].map(rung),
            "one": [rung("a")],
        ]))
        try await fixture.register("ingest-1", .ingest)
        try await fixture.register("tc-1", .transcode)
        try await fixture.register("tc-2", .transcode)
        func placed(_ app: String, _ name: String) async throws -> String? {
            try await fixture.state.streamStarted(StreamStart(app: app, name: name, ingestNode: "ingest-1"))
            return try await fixture.state.lookup(app: app, name: name)?.renditions.first?.transcoderNode
        }
        // No heartbeat in between: the reported loads stay equal (0), so the rungs already
        // assigned decide. One job of four rungs outweighs two of one.
        #expect(try await placed("four", "x") == "tc-1")
        #expect(try await placed("one", "y") == "tc-2")
        #expect(try await placed("one", "z") == "tc-2")
        #expect(try await placed("one", "w") == "tc-2")
        #expect(try await placed("one", "v") == "tc-2")
        // Four rungs each: the tie goes to the smaller id.
        #expect(try await placed("one", "u") == "tc-1")
        try await fixture.close()
    }

    @Test func aDeadTranscodersJobMovesWithinTheDeadline() async throws {
        let fixture = try await CoordinatorFixture()
        try await fixture.register("ingest-1", .ingest)
        try await fixture.register("tc-1", .transcode)
        try await fixture.register("tc-2", .transcode)
        _ = try await fixture.state.heartbeat(nodeID: "tc-2", load: 0.9, streams: [])
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam", ingestNode: "ingest-1", facts: .sample))
        #expect(try await fixture.state.lookup(app: "live", name: "cam")?.renditions.first?.transcoderNode == "tc-1")

        // tc-1 stops heartbeating; the others keep going.
        for _ in 0..<3 {
            fixture.clock.advance(by: 1)
            _ = try await fixture.state.heartbeat(nodeID: "ingest-1", load: 0, streams: [.publishing(app: "live", name: "cam", facts: .sample)])
            _ = try await fixture.state.heartbeat(nodeID: "tc-2", load: 0.9, streams: [])
            #expect(try await fixture.state.sweep().isEmpty)
        }
        fixture.clock.advance(by: 0.25)
        let moves = try await fixture.state.sweep()
        #expect(moves == [TranscodeMove(app: "live", name: "cam", from: "tc-1", to: "tc-2")])
        let location = try #require(try await fixture.state.lookup(app: "live", name: "cam"))
        #expect(location.renditions.allSatisfy { $0.transcoderNode == "tc-2" && $0.state == .assigned })
        let assignment = TranscodeAssignment(app: "live", name: "cam", ingestNode: "ingest-1", rungs: CoordinatorFixture.ladder)
        #expect(try await fixture.state.heartbeat(nodeID: "tc-2", load: 0.9, streams: []).instructions == [.transcode(assignment)])

        // tc-1 comes back still running the job: it is told to stop.
        let stale = [StreamReport.transcoding(app: "live", name: "cam", rungs: ["720p", "480p"])]
        #expect(try await fixture.state.heartbeat(nodeID: "tc-1", load: 0.1, streams: stale).instructions == [.stopTranscode(app: "live", name: "cam")])
        #expect(try await fixture.state.events().contains { $0.kind == "transcode.moved" })
        try await fixture.close()
    }

    /// A drain: the job moves to the other transcoder naming the draining one, which is not
    /// told to stop (it stops once taken over) and gets no new job; once the new one reports
    /// the job running, the handover is forgotten.
    @Test func aDrainingTranscodersJobMovesWithAHandoverAndItGetsNoNewJob() async throws {
        let fixture = try await CoordinatorFixture()
        try await fixture.register("ingest-1", .ingest)
        try await fixture.register("tc-1", .transcode)
        try await fixture.register("tc-2", .transcode)
        _ = try await fixture.state.heartbeat(nodeID: "tc-2", load: 0.9, streams: [])
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam", ingestNode: "ingest-1"))
        #expect(try await fixture.state.lookup(app: "live", name: "cam")?.renditions.first?.transcoderNode == "tc-1")
        let running = [StreamReport.transcoding(app: "live", name: "cam", rungs: ["720p", "480p"])]
        _ = try await fixture.state.heartbeat(nodeID: "tc-1", load: 0.1, streams: running)

        #expect(try await fixture.state.drain(nodeID: "tc-1") == ["live/cam"])
        // Idempotent: nothing left to move.
        #expect(try await fixture.state.drain(nodeID: "tc-1") == [])
        await #expect(throws: CoordinatorError.unknownNode("nobody")) { try await fixture.state.drain(nodeID: "nobody") }
        #expect(try await fixture.state.nodes().first { $0.id == "tc-1" }?.draining == true)
        let handover = TranscodeAssignment(app: "live", name: "cam", ingestNode: "ingest-1", rungs: CoordinatorFixture.ladder, takesOverFrom: "tc-1")
        #expect(try await fixture.state.heartbeat(nodeID: "tc-2", load: 0.9, streams: []).instructions == [.transcode(handover)])
        // The draining node still runs it, and is not told to stop.
        #expect(try await fixture.state.heartbeat(nodeID: "tc-1", load: 0.1, streams: running).instructions.isEmpty)
        // A new stream goes to tc-2 although tc-1 is idler: a draining node takes no job.
        _ = try await fixture.state.heartbeat(nodeID: "tc-1", load: 0, streams: [])
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam2", ingestNode: "ingest-1"))
        #expect(try await fixture.state.lookup(app: "live", name: "cam2")?.renditions.first?.transcoderNode == "tc-2")
        // tc-2 reports it running: the handover is over, a later assignment is a plain one.
        _ = try await fixture.state.heartbeat(nodeID: "tc-2", load: 0.9, streams: running)
        #expect(try await fixture.state.heartbeat(nodeID: "tc-2", load: 0.9, streams: []).instructions.contains(.transcode(TranscodeAssignment(
            app: "live", name: "cam", ingestNode: "ingest-1", rungs: CoordinatorFixture.ladder))))
        #expect(try await fixture.state.events().contains { $0.kind == "node.draining" && $0.subject == "tc-1" })
        try await fixture.close()
    }

    /// A drain with no other transcoder moves nothing: the job stays where it runs.
    @Test func aDrainWithNowhereToGoLeavesTheJob() async throws {
        let fixture = try await CoordinatorFixture()
        try await fixture.register("ingest-1", .ingest)
        try await fixture.register("tc-1", .transcode)
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam", ingestNode: "ingest-1"))
        #expect(try await fixture.state.drain(nodeID: "tc-1") == [])
        #expect(try await fixture.state.lookup(app: "live", name: "cam")?.renditions.allSatisfy { $0.transcoderNode == "tc-1" } == true)
        try await fixture.close()
    }

    @Test func withoutTranscodersAJobWaitsUnplacedUntilOneRegisters() async throws {
        let fixture = try await CoordinatorFixture()
        try await fixture.register("ingest-1", .ingest)
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam", ingestNode: "ingest-1"))
        #expect(try await fixture.state.lookup(app: "live", name: "cam")?.renditions.allSatisfy { $0.state == .unplaced && $0.transcoderNode == nil } == true)
        let reply = try await fixture.register("tc-1", .transcode)
        #expect(reply.instructions.count == 1)
        #expect(try await fixture.state.lookup(app: "live", name: "cam")?.renditions.allSatisfy { $0.transcoderNode == "tc-1" } == true)
        try await fixture.close()
    }

    @Test func anEndedStreamsJobIsStopped() async throws {
        let fixture = try await CoordinatorFixture()
        try await fixture.register("ingest-1", .ingest)
        try await fixture.register("tc-1", .transcode)
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam", ingestNode: "ingest-1"))
        let running = [StreamReport.transcoding(app: "live", name: "cam", rungs: ["720p", "480p"])]
        _ = try await fixture.state.heartbeat(nodeID: "tc-1", load: 0, streams: running)
        await #expect(throws: CoordinatorError.notTheIngest(app: "live", name: "cam", nodeID: "tc-1")) {
            try await fixture.state.streamEnded(app: "live", name: "cam", ingestNode: "tc-1")
        }
        try await fixture.state.streamEnded(app: "live", name: "cam", ingestNode: "ingest-1")
        #expect(try await fixture.state.lookup(app: "live", name: "cam") == nil)
        #expect(try await fixture.state.heartbeat(nodeID: "tc-1", load: 0, streams: running).instructions == [.stopTranscode(app: "live", name: "cam")])
        try await fixture.close()
    }

    @Test func aDeadIngestsStreamsEnd() async throws {
        let fixture = try await CoordinatorFixture()
        try await fixture.register("ingest-1", .ingest)
        try await fixture.state.streamStarted(StreamStart(app: "show", name: "cam", ingestNode: "ingest-1"))
        fixture.clock.advance(by: 3.5)
        try await fixture.state.sweep()
        #expect(try await fixture.state.lookup(app: "show", name: "cam") == nil)
        #expect(try await fixture.state.liveStreams().isEmpty)
        try await fixture.close()
    }
}
