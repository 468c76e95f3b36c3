import Distributed
import Foundation
import MetricsTestKit
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import Cluster

/// NodeActorSystem over LocalBus and over a real nats-server: the caller (node n1) only
/// holds a remote proxy, so every call crosses the bus. Every wait is bounded by a call
/// timeout or the bus request timeout.
@Suite(.serialized)
struct NodeActorSystemTests {
    typealias Transport = ActorTestCluster.Transport

    @Test(arguments: Transport.available)
    func callsRoundTripWithValuesStructsAndVoid(_ transport: Transport) async throws {
        let cluster = try await ActorTestCluster(transport)
        let (local, remote) = try await cluster.greeter()
        #expect(__isRemoteActor(remote))
        #expect(remote.id == (try NodeActorID(nodeID: "n2", name: "greeter")))
        #expect(remote.id.subject == "actor.n2.greeter")

        #expect(try await remote.greet("ada") == "hello ada")
        #expect(try await remote.answer(Greeting(text: "hi", count: 2), times: 3) == Greeting(text: "HI", count: 6))
        #expect(try await remote.echo([Greeting(text: "g", count: 1)]) == [Greeting(text: "g", count: 1)])
        #expect(try await remote.echo(42) == 42)
        try await remote.touch()
        try await remote.touch()
        #expect(try await remote.touchCount() == 2)
        #expect(try await local.touchCount() == 2)
        await cluster.shutdown()
    }

    @Test(arguments: Transport.available)
    func remoteErrorsAreRethrownTyped(_ transport: Transport) async throws {
        let cluster = try await ActorTestCluster(transport)
        let (local, remote) = try await cluster.greeter()
        await #expect(throws: NodeActorSystemError.remote(type: String(reflecting: GreeterError.self), message: "refused(\"busy\")")) {
            try await remote.refuse("busy")
        }
        cluster.caller.registerRemoteError(GreeterError.self)
        await #expect(throws: GreeterError.refused("later")) {
            try await remote.refuse("later")
        }
        // The system holds actors weakly: the test keeps its greeter alive.
        withExtendedLifetime(local) {}
        await cluster.shutdown()
    }

    @Test(arguments: Transport.available)
    func slowCallsTimeOutAndTheTimeoutCanBeRaisedPerTask(_ transport: Transport) async throws {
        let cluster = try await ActorTestCluster(transport, configuration: .init(defaultCallTimeout: .milliseconds(200)))
        let (local, remote) = try await cluster.greeter()
        let start = ContinuousClock.now
        await #expect(throws: NodeActorSystemError.timeout(remote.id)) {
            try await remote.sleep(milliseconds: 3000)
        }
        #expect(ContinuousClock.now - start < .milliseconds(1500))
        let woke = try await NodeActorSystem.$callTimeout.withValue(.seconds(3)) {
            try await remote.sleep(milliseconds: 400)
        }
        #expect(woke == "woke")
        // The system holds actors weakly: the test keeps its greeter alive.
        withExtendedLifetime(local) {}
        await cluster.shutdown()
    }

    @Test func callsBeyondTheConcurrencyLimitAreRefused() async throws {
        let cluster = try await ActorTestCluster(.local, configuration: .init(defaultCallTimeout: .seconds(3), maxConcurrentCalls: 1))
        let (local, remote) = try await cluster.greeter()
        async let slow = remote.sleep(milliseconds: 500)
        // Wait (bounded) until the slow call occupies the only slot.
        let deadline = ContinuousClock.now + .seconds(2)
        while cluster.callee.state.withLockedValue({ $0.callsInFlight }) == 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        await #expect(throws: NodeActorSystemError.overloaded(remote.id)) {
            try await remote.greet("second")
        }
        #expect(try await slow == "woke")
        #expect(try cluster.calleeMetrics.expectCounter("estuary_actor_calls_rejected_total", [("reason", "overloaded")]).totalValue == 1)
        #expect(try await remote.greet("third") == "hello third")
        withExtendedLifetime(local) {}
        await cluster.shutdown()
    }

    @Test(arguments: Transport.available)
    func actorsWithoutResponderAreUnreachable(_ transport: Transport) async throws {
        let cluster = try await ActorTestCluster(transport)
        let nobody = try Greeter.resolve(id: NodeActorID(nodeID: "n2", name: "nobody"), using: cluster.caller)
        await #expect(throws: NodeActorSystemError.unreachable(nobody.id)) {
            try await nobody.greet("anyone")
        }
        await cluster.shutdown()
    }

    @Test(arguments: Transport.available)
    func releasedActorsStopAnswering(_ transport: Transport) async throws {
        let cluster = try await ActorTestCluster(transport)
        var (local, remote): (Greeter?, Greeter) = try await cluster.greeter(named: "short-lived")
        #expect(try await remote.greet("x") == "hello x")
        #expect(cluster.callee.localActorIDs == [remote.id])
        weak let released = local
        local = nil
        // The Task that ran `greet` may hold the actor for a moment after it replied.
        let deadline = ContinuousClock.now + .seconds(2)
        while released != nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(released == nil)
        #expect(cluster.callee.localActorIDs.isEmpty)
        #expect(try cluster.callee.resolve(id: remote.id, as: Greeter.self) == nil)
        try await cluster.settle()
        await #expect(throws: NodeActorSystemError.unreachable(remote.id)) {
            try await remote.greet("y")
        }
        await cluster.shutdown()
    }

    @Test(arguments: Transport.available)
    func callersOfAnotherVersionFailLoudly(_ transport: Transport) async throws {
        let cluster = try await ActorTestCluster(transport, callerVersion: 2)
        let (local, remote) = try await cluster.greeter()
        await #expect(throws: NodeActorSystemError.versionMismatch(local: 2, remote: 1)) {
            try await remote.touch()
        }
        #expect(try await local.touchCount() == 0)
        #expect(try cluster.calleeMetrics.expectCounter("estuary_actor_calls_rejected_total", [("reason", "version")]).totalValue == 1)

        // A hand-made envelope of version 99, whatever else it holds, gets a version rejection.
        let reply = try await cluster.rawRequest(remote.id.subject, ByteBuffer(string: #"{"version":99,"future":"field"}"#))
        #expect(reply.version == NodeActorSystem.protocolVersion)
        guard case .rejected(.version, _) = reply.outcome else {
            Issue.record("expected a version rejection, got \(reply.outcome)")
            return
        }
        #expect(try cluster.calleeMetrics.expectCounter("estuary_actor_calls_rejected_total", [("reason", "version")]).totalValue == 2)
        await cluster.shutdown()
    }

    @Test(arguments: Transport.available)
    func badMessagesGetAnErrorReplyAndAreCounted(_ transport: Transport) async throws {
        let cluster = try await ActorTestCluster(transport)
        let (local, remote) = try await cluster.greeter()
        let subject = remote.id.subject
        let metrics = cluster.calleeMetrics

        // Garbage, and a real envelope cut in half.
        let garbage = try await cluster.rawRequest(subject, ByteBuffer(bytes: [0xEB, 0x01, 0xFF]))
        #expect(garbage.version == NodeActorSystem.protocolVersion)
        #expect(Self.rejection(garbage) == .malformed)
        let envelope = ActorCallEnvelope(version: 1, target: "nonsense", genericSubstitutions: [], arguments: [], callee: remote.id)
        var truncated = try envelope.encoded()
        truncated.moveWriterIndex(to: truncated.readableBytes / 2)
        #expect(Self.rejection(try await cluster.rawRequest(subject, truncated)) == .malformed)
        #expect(try metrics.expectCounter("estuary_actor_calls_rejected_total", [("reason", "malformed")]).totalValue == 2)

        // A well-formed envelope naming no method of this build.
        #expect(Self.rejection(try await cluster.rawRequest(subject, try envelope.encoded())) == .unknownTarget)
        #expect(try metrics.expectCounter("estuary_actor_calls_rejected_total", [("reason", "unknown_target")]).totalValue == 1)

        // An envelope for another actor than the subject's.
        var misrouted = envelope
        misrouted.callee = try NodeActorID(nodeID: "n2", name: "other")
        #expect(Self.rejection(try await cluster.rawRequest(subject, try misrouted.encoded())) == .unknownActor)
        #expect(try metrics.expectCounter("estuary_actor_calls_rejected_total", [("reason", "unknown_actor")]).totalValue == 1)

        // Published without a reply subject: counted, nothing to answer.
        try cluster.callerBus.publish(subject: subject, payload: ByteBuffer(string: "garbage"))
        try await cluster.settle()
        let deadline = ContinuousClock.now + .seconds(2)
        while (try? metrics.expectCounter("estuary_actor_calls_rejected_total", [("reason", "malformed")]).totalValue) != 3, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try metrics.expectCounter("estuary_actor_calls_rejected_total", [("reason", "malformed")]).totalValue == 3)

        // The actor still works.
        #expect(try await remote.greet("after") == "hello after")
        // The system holds actors weakly: the test keeps its greeter alive.
        withExtendedLifetime(local) {}
        await cluster.shutdown()
    }

    @Test func localActorsResolveToThemselvesAndNamesAreUnique() async throws {
        let bus = LocalBus()
        let system = try NodeActorSystem(nodeID: "n1", bus: bus, metricsFactory: TestMetrics())
        let greeter = try system.makeActor(named: "relay.n1") { Greeter(actorSystem: system) }
        #expect(greeter.id.subject == "actor.n1.relay.n1")
        let resolved = try Greeter.resolve(id: greeter.id, using: system)
        #expect(resolved === greeter)
        #expect(!__isRemoteActor(resolved))
        #expect(throws: NodeActorSystemError.duplicateActorName(greeter.id)) {
            _ = try system.makeActor(named: "relay.n1") { Greeter(actorSystem: system) }
        }
        let anonymous = Greeter(actorSystem: system)
        #expect(anonymous.id.name.hasPrefix("anonymous-"))
        #expect(try await anonymous.greet("me") == "hello me")
    }

    @Test(arguments: [("n1", "a.*"), ("n1", "a..b"), ("n.1", "a"), ("n1", "a >"), ("", "a"), ("n1", ""), ("n1", String(repeating: "x", count: 65))])
    func invalidIDsAreRefused(_ nodeID: String, _ name: String) throws {
        #expect(throws: NodeActorSystemError.invalidActorID(nodeID: nodeID, name: name)) {
            _ = try NodeActorID(nodeID: nodeID, name: name)
        }
        let json = Data(#"{"nodeID":"\#(nodeID)","name":"\#(name)"}"#.utf8)
        #expect(throws: (any Error).self) { _ = try JSONDecoder().decode(NodeActorID.self, from: json) }
    }

    static func rejection(_ reply: ActorReplyEnvelope) -> ActorCallRejection? {
        if case .rejected(let reason, _) = reply.outcome { reason } else { nil }
    }
}
