import Distributed

/// The coordinator as the other roles see it, without importing the `Coordinator` module
/// (roles must not import each other). `@Resolvable` generates `$CoordinatorAPI`, a stub
/// that makes remote calls to whichever node hosts the coordinator:
///
/// ```swift
/// let coordinator = try $CoordinatorAPI.resolve(id: CoordinatorAddress.id(onNode: "coord-1"), using: system)
/// let reply = try await coordinator.heartbeat(nodeID: "relay-1", load: 0.3, streams: reports)
/// ```
///
/// Every method is control plane: media never waits on these calls.
@Resolvable
public protocol CoordinatorAPI: DistributedActor where ActorSystem == NodeActorSystem {
    /// Announces a node (at start, and when a heartbeat reply says `register`), with the
    /// streams it already carries. Returns the first instructions.
    distributed func register(node: NodeRegistration) async throws -> HeartbeatReply
    /// Keeps the node alive (`deadAfter` without one, and it is dead) and reports its
    /// streams; the reply carries what the node should do.
    distributed func heartbeat(nodeID: String, load: Double, streams: [StreamReport]) async throws -> HeartbeatReply
    /// An ingest accepted a publisher. Places the stream's transcode job when its app has a
    /// ladder.
    distributed func streamStarted(_ start: StreamStart) async throws
    /// The publisher of `app/name` on `ingestNode` left for good (after the grace period).
    distributed func streamEnded(app: String, name: String, ingestNode: String) async throws
    /// The node drains: it takes no new transcode jobs, and each of its jobs moves to
    /// another transcoder, which takes over at a source keyframe while the draining node
    /// keeps encoding until then. Returns the jobs moved (0 when no other transcoder is
    /// alive: the jobs stay until the node leaves), as `app/name`. Idempotent.
    distributed func drain(nodeID: String) async throws -> [String]
    /// Where `app/name` lives, or nil when it is not live.
    distributed func lookup(app: String, name: String) async throws -> StreamLocation?
    /// Whether `key` is a valid, unrevoked stream key for `app/name`.
    distributed func verifyStreamKey(app: String, name: String, key: String) async throws -> Bool
    /// The cluster's one-publisher rule as a lock: whether ingest `node` may admit a
    /// publisher of `app/name` now, false while another ingest claimed it within the last
    /// 3 s (two encoders that start the stream on two ingests at the same moment). Asked
    /// after the rule's bus question has let the publisher through; `handedOver`: the ingest
    /// that held the stream answered yes (gave it up), so the claim takes it over.
    distributed func claimPublication(app: String, name: String, node: String, handedOver: Bool) async throws -> Bool
}

/// Where the coordinator actor lives: its well-known name on the coordinator's node.
public enum CoordinatorAddress {
    /// The actor's name on its node (`system.makeActor(named:)`).
    public static let actorName = "coordinator"

    /// The coordinator's id when it runs on node `nodeID`.
    public static func id(onNode nodeID: String) throws(NodeActorSystemError) -> NodeActorID {
        try NodeActorID(nodeID: nodeID, name: actorName)
    }
}
