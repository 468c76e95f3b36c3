import Cluster
import Distributed
import Foundation
import Synchronization
import Testing

@testable import Coordinator

/// The coordinator pushes to nodes between heartbeats (`NodeDispatch`): jobs to the
/// transcoder that gets them, kicks to the ingest. The nodes here are role actors on
/// their own actor systems, reached over a `LocalBus` as bus requests, like any node's;
/// they record what they are told.
struct NodeDispatchTests {
    /// What a stand-in node was told.
    final class Calls<Value: Sendable>: Sendable {
        private let values = Mutex<[Value]>([])
        func append(_ value: Value) { values.withLock { $0.append(value) } }
        var all: [Value] { values.withLock { $0 } }
    }

    /// A transcoder's `TranscodeWorkerAPI`, remembering its assignments.
    distributed actor RecordingWorker: TranscodeWorkerAPI {
        typealias ActorSystem = NodeActorSystem
        let assigned: Calls<TranscodeAssignment>

        init(assigned: Calls<TranscodeAssignment>, actorSystem: NodeActorSystem) {
            self.assigned = assigned
            self.actorSystem = actorSystem
        }

        distributed func assign(_ assignment: TranscodeAssignment) {
            assigned.append(assignment)
        }

        distributed func stop(app: String, name: String) {}

        distributed func jobs() -> [StreamReport] {
            assigned.all.map { StreamReport.transcoding(app: $0.app, name: $0.name, rungs: $0.rungs.map(\.name)) }
        }
    }

    /// An ingest's `IngestNodeAPI` holding one publisher, `live/cam`.
    distributed actor RecordingIngest: IngestNodeAPI {
        typealias ActorSystem = NodeActorSystem
        let kicked: Calls<String>

        init(kicked: Calls<String>, actorSystem: NodeActorSystem) {
            self.kicked = kicked
            self.actorSystem = actorSystem
        }

        distributed func kick(app: String, name: String) -> Bool {
            kicked.append("\(app)/\(name)")
            return app == "live" && name == "cam"
        }

        distributed func keyRevoked(app: String, name: String) -> Bool {
            kicked.append("revoked \(app)/\(name)")
            return app == "live" && name == "cam"
        }

        distributed func streams() -> [StreamReport] {
            [.publishing(app: "live", name: "cam", facts: .sample, bytes: 1000)]
        }
    }

    /// Waits (bounded) until `condition` holds: pushes run in their own task.
    private func eventually(_ condition: () -> Bool) async throws -> Bool {
        for _ in 0..<200 {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }

    @Test func jobsAndKicksArePushedWithoutWaitingForAHeartbeat() async throws {
        let fixture = try await CoordinatorFixture()
        let bus = LocalBus()
        let coordinatorSystem = try NodeActorSystem(nodeID: "coord-1", bus: bus)
        let ingestSystem = try NodeActorSystem(nodeID: "ingest-1", bus: bus)
        let systems = try ["t1", "t2"].map { try NodeActorSystem(nodeID: $0, bus: bus) }
        await fixture.state.setDispatch(NodeDispatch(system: coordinatorSystem))
        let kicks = Calls<String>()
        let ingest = try ingestSystem.makeActor(named: RoleAddress.ingest) { RecordingIngest(kicked: kicks, actorSystem: ingestSystem) }
        let assignments = [Calls<TranscodeAssignment>(), Calls<TranscodeAssignment>()]
        let workers = try zip(systems, assignments).map { system, calls in
            try system.makeActor(named: RoleAddress.transcodeWorker) { RecordingWorker(assigned: calls, actorSystem: system) }
        }

        try await fixture.register("ingest-1", .ingest)
        try await fixture.register("t1", .transcode)
        try await fixture.register("t2", .transcode)
        _ = try await fixture.state.heartbeat(nodeID: "t2", load: 5, streams: [])

        // Placed on the least-loaded transcoder, t1, which has it before any heartbeat.
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam", ingestNode: "ingest-1", facts: .sample))
        #expect(try await eventually { assignments[0].all.count == 1 })
        let job = try #require(assignments[0].all.first)
        #expect(job.app == "live" && job.name == "cam" && job.ingestNode == "ingest-1")
        #expect(job.rungs.map(\.name) == CoordinatorFixture.ladder.map(\.name))
        #expect(assignments[1].all.isEmpty)

        // The same ingest announcing the stream again (its publisher reconnected) keeps
        // the session: no new job, no second push.
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam", ingestNode: "ingest-1", facts: .sample))
        #expect(try await fixture.state.liveStreams().count == 1)

        // t1 dies: the sweep moves the job to t2, which is told at once.
        fixture.clock.advance(by: 2)
        _ = try await fixture.state.heartbeat(nodeID: "ingest-1", load: 0, streams: [.publishing(app: "live", name: "cam", facts: .sample)])
        _ = try await fixture.state.heartbeat(nodeID: "t2", load: 5, streams: [])
        fixture.clock.advance(by: 2)
        let moves = try await fixture.state.sweep()
        #expect(moves == [TranscodeMove(app: "live", name: "cam", from: "t1", to: "t2")])
        #expect(try await eventually { assignments[1].all.count == 1 })
        #expect(assignments[1].all.first?.name == "cam")
        #expect(assignments[0].all.count == 1)

        // A kick reaches the ingest during the admin request; nothing waits for a heartbeat.
        #expect(try await fixture.state.kick(app: "live", name: "cam"))
        #expect(kicks.all == ["live/cam"])
        let reply = try await fixture.state.heartbeat(nodeID: "ingest-1", load: 0, streams: [.publishing(app: "live", name: "cam", facts: .sample)])
        #expect(!reply.instructions.contains(.kick(app: "live", name: "cam")))

        // The live view of a node merges what its role actors say.
        let live = try #require(try await fixture.state.liveStreams(onNode: "ingest-1"))
        #expect(live == [.publishing(app: "live", name: "cam", facts: .sample, bytes: 1000)])
        #expect(try await fixture.state.liveStreams(onNode: "nobody") == nil)
        withExtendedLifetime((ingest, workers)) {}
        try await fixture.close()
    }

    @Test func anUnreachableNodeGetsItsKickWithTheNextHeartbeat() async throws {
        let fixture = try await CoordinatorFixture()
        let bus = LocalBus()
        let coordinatorSystem = try NodeActorSystem(nodeID: "coord-1", bus: bus)
        await fixture.state.setDispatch(NodeDispatch(system: coordinatorSystem, timeout: .milliseconds(200)))
        // The ingest is registered, but no actor answers for it (it is reconnecting).
        try await fixture.register("ingest-1", .ingest)
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam", ingestNode: "ingest-1", facts: .sample))

        #expect(try await fixture.state.kick(app: "live", name: "cam"))
        let reply = try await fixture.state.heartbeat(nodeID: "ingest-1", load: 0, streams: [.publishing(app: "live", name: "cam", facts: .sample)])
        #expect(reply.instructions.contains(.kick(app: "live", name: "cam")))
        await #expect(throws: NodeActorSystemError.self) {
            try await fixture.state.liveStreams(onNode: "ingest-1")
        }
        try await fixture.close()
    }

    @Test func aRevokedKeyIsPushedToEveryLiveIngestAndQueuedForOneThatDoesNotAnswer() async throws {
        let fixture = try await CoordinatorFixture()
        let bus = LocalBus()
        let coordinatorSystem = try NodeActorSystem(nodeID: "coord-1", bus: bus)
        let ingestSystem = try NodeActorSystem(nodeID: "ingest-1", bus: bus)
        await fixture.state.setDispatch(NodeDispatch(system: coordinatorSystem, timeout: .milliseconds(300)))
        let calls = Calls<String>()
        let ingest = try ingestSystem.makeActor(named: RoleAddress.ingest) { RecordingIngest(kicked: calls, actorSystem: ingestSystem) }
        try await fixture.register("ingest-1", .ingest)
        // ingest-2 is registered but does not answer (reconnecting); t1 caches no keys.
        try await fixture.register("ingest-2", .ingest)
        try await fixture.register("t1", .transcode)

        let created = try await fixture.state.createStreamKey(app: "live", name: "cam")
        #expect(try await fixture.state.revokeStreamKey(id: created.id))
        // ingest-1 was told during the request.
        #expect(calls.all == ["revoked live/cam"])
        let reply1 = try await fixture.state.heartbeat(nodeID: "ingest-1", load: 0, streams: [])
        #expect(!reply1.instructions.contains(.keyRevoked(app: "live", name: "cam")))
        // ingest-2 hears of it with its next heartbeat, once.
        let reply2 = try await fixture.state.heartbeat(nodeID: "ingest-2", load: 0, streams: [])
        #expect(reply2.instructions.contains(.keyRevoked(app: "live", name: "cam")))
        let again = try await fixture.state.heartbeat(nodeID: "ingest-2", load: 0, streams: [])
        #expect(!again.instructions.contains(.keyRevoked(app: "live", name: "cam")))
        let transcoder = try await fixture.state.heartbeat(nodeID: "t1", load: 0, streams: [])
        #expect(!transcoder.instructions.contains(.keyRevoked(app: "live", name: "cam")))

        // Revoking twice tells nobody again; an unknown key is no revocation.
        #expect(try await fixture.state.revokeStreamKey(id: created.id))
        #expect(calls.all == ["revoked live/cam"])
        #expect(try await !fixture.state.revokeStreamKey(id: 9999))
        withExtendedLifetime(ingest) {}
        try await fixture.close()
    }
}
