import Distributed

/// A node's live sessions as the coordinator sees them: every node that serves clients
/// (ingest, relay, edge, all) hosts one, under `RoleAddress.sessions`, so that the
/// coordinator's admin API lists and kicks sessions across the cluster, asking each node
/// live.
@Resolvable
public protocol SessionsAPI: DistributedActor where ActorSystem == NodeActorSystem {
    /// The node's live sessions, oldest first (at most `limit`).
    distributed func sessions(limit: Int) async throws -> [SessionReport]
    /// Kicks session `id` with `reason`; false when the node has no such session.
    distributed func kick(id: String, reason: String) async throws -> Bool
}
