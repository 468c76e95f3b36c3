import Cluster
import Distributed
import Foundation
import Testing

@testable import Coordinator

/// The `Coordinator` actor on one node, called from another through `$CoordinatorAPI`
/// (what roles use, without importing this module): every call crosses a `LocalBus` as a
/// bus request. Waits are bounded by the system's call timeout.
struct CoordinatorActorTests {
    @Test func rolesCallTheCoordinatorThroughTheBus() async throws {
        let fixture = try await CoordinatorFixture()
        let bus = LocalBus()
        let coordinatorSystem = try NodeActorSystem(nodeID: "coord-1", bus: bus)
        let ingestSystem = try NodeActorSystem(nodeID: "ingest-1", bus: bus)
        ingestSystem.registerRemoteError(CoordinatorError.self)
        let state = fixture.state
        let local = try coordinatorSystem.makeActor(named: CoordinatorAddress.actorName) {
            Coordinator(state: state, actorSystem: coordinatorSystem)
        }
        let remote = try $CoordinatorAPI.resolve(id: CoordinatorAddress.id(onNode: "coord-1"), using: ingestSystem)
        #expect(__isRemoteActor(remote))

        let unknown = try await remote.heartbeat(nodeID: "ingest-1", load: 0, streams: [])
        #expect(unknown.instructions == [.register])
        let registered = try await remote.register(node: NodeRegistration(nodeID: "ingest-1", role: .ingest, advertiseHost: "10.0.0.5"))
        #expect(registered.instructions.isEmpty)
        #expect(registered.deadAfter == .seconds(3))

        try await remote.streamStarted(StreamStart(app: "live", name: "cam", ingestNode: "ingest-1", facts: .sample))
        let location = try #require(try await remote.lookup(app: "live", name: "cam"))
        #expect(location.ingestHost == "10.0.0.5")
        #expect(location.renditions.count == CoordinatorFixture.ladder.count)
        #expect(try await remote.lookup(app: "live", name: "nothing") == nil)

        let key = try await fixture.state.createStreamKey(app: "live", name: "cam")
        #expect(try await remote.verifyStreamKey(app: "live", name: "cam", key: key.key))
        #expect(try await !remote.verifyStreamKey(app: "live", name: "cam", key: "guess"))

        // The coordinator's errors come back typed.
        await #expect(throws: CoordinatorError.invalidStreamPath(app: "bad/app", name: "cam")) {
            try await remote.lookup(app: "bad/app", name: "cam")
        }

        // A kick recorded by the admin side reaches the ingest in its heartbeat reply.
        #expect(try await fixture.state.kick(app: "live", name: "cam"))
        let reports = [StreamReport.publishing(app: "live", name: "cam", facts: .sample)]
        #expect(try await remote.heartbeat(nodeID: "ingest-1", load: 0.1, streams: reports).instructions == [.kick(app: "live", name: "cam")])
        #expect(try await remote.heartbeat(nodeID: "ingest-1", load: 0.1, streams: reports).instructions.isEmpty)

        try await remote.streamEnded(app: "live", name: "cam", ingestNode: "ingest-1")
        #expect(try await remote.lookup(app: "live", name: "cam") == nil)
        // The system holds actors weakly: the test keeps the coordinator alive.
        withExtendedLifetime(local) {}
        try await fixture.close()
    }
}
