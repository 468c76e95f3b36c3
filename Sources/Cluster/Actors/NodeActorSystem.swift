import Distributed
import Foundation
import Logging
import Metrics
import NIOConcurrencyHelpers

/// The distributed actor system of a node: actors live on one node and are called from any
/// node through a `Bus` (NATS between processes, `LocalBus` in one process for `--role
/// all`, on the same code path).
///
/// A remote call is a bus request to the callee's subject (`NodeActorID.subject`) carrying
/// a JSON `ActorCallEnvelope` (protocol version, target, arguments, callee); the reply is an
/// `ActorReplyEnvelope` (a result, a thrown error or a rejection). Both carry
/// `protocolVersion`: ends of different versions refuse each other with `versionMismatch`
/// rather than misroute.
///
/// Local actors are held weakly, keyed by id, and each has one bus subscription from
/// `actorReady` to `resignID`. Incoming requests are decoded on the bus's delivery thread,
/// which never blocks; only executing the method hops into a Task (calls are control
/// plane, not per-frame). With `NATSBus`, flush the bus after creating actors before
/// expecting other nodes to reach them: a subscription is live once the server has it.
public final class NodeActorSystem: DistributedActorSystem {
    public typealias ActorID = NodeActorID
    public typealias InvocationEncoder = NodeInvocationEncoder
    public typealias InvocationDecoder = NodeInvocationDecoder
    public typealias ResultHandler = NodeResultHandler
    public typealias SerializationRequirement = any Codable

    /// The envelope format spoken by this build. Bump it on any incompatible change of
    /// the envelopes or of their encoding.
    public static let protocolVersion: UInt16 = 1

    /// Overrides `Configuration.defaultCallTimeout` for remote calls made by the current
    /// task: `try await NodeActorSystem.$callTimeout.withValue(.seconds(10)) { … }`.
    @TaskLocal public static var callTimeout: Duration?

    /// The node this system's actors live on.
    public let nodeID: String
    public let bus: any Bus
    public let configuration: Configuration
    /// The version written into envelopes; `protocolVersion` except in tests of mismatches.
    let version: UInt16
    let logger: Logger
    let metricsFactory: any MetricsFactory

    /// A local actor, held weakly: the system must not keep an actor alive (its deinit
    /// resigns its id).
    struct WeakActor: Sendable {
        weak var actor: (any DistributedActor)?
    }

    struct Entry: Sendable {
        /// nil between `assignID` and `actorReady`.
        var actor: WeakActor?
        var subscription: BusSubscription?
    }

    struct State: Sendable {
        var entries: [NodeActorID: Entry] = [:]
        var nextAnonymous: UInt64 = 1
        var callsInFlight = 0
        /// Decoders of error types registered with `registerRemoteError`, by type name.
        var errorDecoders: [String: @Sendable (Data) throws -> any Error] = [:]
    }

    let state = NIOLockedValueBox(State())

    /// - Parameters:
    ///   - nodeID: this node's id (`--node-id`), one subject token.
    ///   - bus: where calls travel; shared by every system of a cluster (or of a process).
    ///   - logger: rejections at debug, reply failures at warning.
    ///   - metricsFactory: for `estuary_actor_calls_rejected_total{reason}`.
    public convenience init(
        nodeID: String,
        bus: any Bus,
        configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "estuary.cluster.actors"),
        metricsFactory: any MetricsFactory = MetricsSystem.factory
    ) throws(NodeActorSystemError) {
        try self.init(nodeID: nodeID, bus: bus, configuration: configuration, logger: logger, metricsFactory: metricsFactory, version: Self.protocolVersion)
    }

    /// `version` lets tests build a node of another protocol version.
    init(
        nodeID: String,
        bus: any Bus,
        configuration: Configuration,
        logger: Logger,
        metricsFactory: any MetricsFactory,
        version: UInt16
    ) throws(NodeActorSystemError) {
        guard NodeActorID.isValidNodeID(nodeID) else {
            throw .invalidActorID(nodeID: nodeID, name: "")
        }
        self.nodeID = nodeID
        self.bus = bus
        self.configuration = configuration
        self.logger = logger
        self.metricsFactory = metricsFactory
        self.version = version
    }

    /// Lets remote calls rethrow errors of type `E` as themselves instead of
    /// `NodeActorSystemError.remote`: the callee sends the error JSON-encoded.
    public func registerRemoteError<E: Error & Codable>(_ type: E.Type) {
        state.withLockedValue { state in
            state.errorDecoders[String(reflecting: E.self)] = { data in try JSONDecoder().decode(E.self, from: data) }
        }
    }
}
