import Cluster
import Distributed

/// The coordinator as a distributed actor of the node's `NodeActorSystem`: the other roles
/// call it through `$CoordinatorAPI` (from `Cluster`, without importing this module).
///
/// It is a thin shell: every call goes to `CoordinatorState`, which owns the logic and the
/// store. Create it under its well-known name so that nodes find it:
///
/// ```swift
/// let coordinator = try system.makeActor(named: CoordinatorAddress.actorName) {
///     Coordinator(state: state, actorSystem: system)
/// }
/// ```
///
/// The system holds actors weakly: keep the returned actor alive for as long as the node
/// serves it.
public distributed actor Coordinator: CoordinatorAPI {
    public typealias ActorSystem = NodeActorSystem

    /// The logic and store behind the actor; the admin API is given the same instance.
    let state: CoordinatorState

    public init(state: CoordinatorState, actorSystem: NodeActorSystem) {
        self.state = state
        self.actorSystem = actorSystem
    }

    public distributed func register(node: NodeRegistration) async throws -> HeartbeatReply {
        try await state.register(node)
    }

    public distributed func heartbeat(nodeID: String, load: Double, streams: [StreamReport]) async throws -> HeartbeatReply {
        try await state.heartbeat(nodeID: nodeID, load: load, streams: streams)
    }

    public distributed func streamStarted(_ start: StreamStart) async throws {
        try await state.streamStarted(start)
    }

    public distributed func streamEnded(app: String, name: String, ingestNode: String) async throws {
        try await state.streamEnded(app: app, name: name, ingestNode: ingestNode)
    }

    public distributed func drain(nodeID: String) async throws -> [String] {
        try await state.drain(nodeID: nodeID)
    }

    public distributed func lookup(app: String, name: String) async throws -> StreamLocation? {
        try await state.lookup(app: app, name: name)
    }

    public distributed func verifyStreamKey(app: String, name: String, key: String) async throws -> Bool {
        try await state.verifyStreamKey(app: app, name: name, key: key)
    }

    public distributed func claimPublication(app: String, name: String, node: String, handedOver: Bool) async throws -> Bool {
        await state.claimPublication(app: app, name: name, node: node, handedOver: handedOver) == nil
    }
}
