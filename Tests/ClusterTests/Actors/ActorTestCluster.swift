import Foundation
import Logging
import MetricsTestKit
import NIOCore

@testable import Cluster

/// Two `NodeActorSystem`s, `caller` on node `n1` and `callee` on node `n2`, over one
/// `LocalBus` or over two connections to a real nats-server.
final class ActorTestCluster {
    enum Transport: String, CustomStringConvertible, Sendable {
        case local, nats
        var description: String { rawValue }

        /// NATS only where nats-server is installed.
        static var available: [Transport] { NATSServer.isAvailable ? [.local, .nats] : [.local] }
    }

    let caller: NodeActorSystem
    let callee: NodeActorSystem
    let callerBus: any Bus
    let calleeMetrics: TestMetrics
    private let server: NATSServer?
    private let natsBuses: [NATSBus]

    init(_ transport: Transport, configuration: NodeActorSystem.Configuration = .init(), callerVersion: UInt16 = NodeActorSystem.protocolVersion) async throws {
        calleeMetrics = TestMetrics()
        let callerBus: any Bus
        let calleeBus: any Bus
        switch transport {
        case .local:
            let bus = LocalBus()
            (callerBus, calleeBus, server, natsBuses) = (bus, bus, nil, [])
        case .nats:
            let server = try await NATSServer()
            let callerNATS = try await NATSBus.connect(configuration: NATSBusTests.configuration(server))
            let calleeNATS = try await NATSBus.connect(configuration: NATSBusTests.configuration(server))
            (callerBus, calleeBus, self.server, natsBuses) = (callerNATS, calleeNATS, server, [callerNATS, calleeNATS])
        }
        self.callerBus = callerBus
        caller = try NodeActorSystem(
            nodeID: "n1", bus: callerBus, configuration: configuration, logger: .init(label: "test.n1"),
            metricsFactory: TestMetrics(), version: callerVersion
        )
        callee = try NodeActorSystem(
            nodeID: "n2", bus: calleeBus, configuration: configuration, logger: .init(label: "test.n2"),
            metricsFactory: calleeMetrics, version: NodeActorSystem.protocolVersion
        )
    }

    /// Makes subscriptions and unsubscriptions effective on the server (a no-op locally).
    func settle() async throws {
        for bus in natsBuses {
            try await bus.flush()
        }
    }

    /// A greeter on the callee's node and its remote proxy on the caller's.
    func greeter(named name: String = "greeter") async throws -> (local: Greeter, remote: Greeter) {
        let callee = callee
        let local = try callee.makeActor(named: name) { Greeter(actorSystem: callee) }
        try await settle()
        return (local, try Greeter.resolve(id: local.id, using: caller))
    }

    func shutdown() async {
        for bus in natsBuses {
            await bus.close()
        }
        await server?.stop()
    }

    /// Sends `payload` as a request to `subject` and decodes the reply envelope.
    func rawRequest(_ subject: String, _ payload: ByteBuffer) async throws -> ActorReplyEnvelope {
        let reply = try await callerBus.request(subject: subject, payload: payload, timeout: .seconds(2))
        return try JSONDecoder().decode(ActorReplyEnvelope.self, from: Data(reply.readableBytesView))
    }
}
