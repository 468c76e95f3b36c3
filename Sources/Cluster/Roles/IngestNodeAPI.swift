import Distributed

/// An ingest node as the coordinator sees it: the node holding publishers. Each ingest
/// (and each `--role all` node) hosts one, under `RoleAddress.ingest`.
///
/// The coordinator calls it for what must happen now, not at the next heartbeat: an
/// operator's kick, a revoked stream key. Heartbeat instructions remain the fallback, so a call that fails
/// (the node is busy reconnecting) is not lost.
@Resolvable
public protocol IngestNodeAPI: DistributedActor where ActorSystem == NodeActorSystem {
    /// Disconnects the publisher of `app/name`. Returns false when this node holds none.
    distributed func kick(app: String, name: String) async throws -> Bool
    /// A stream key of `app/name` was revoked: the ingest forgets its cached acceptances for
    /// the stream, so the key stops working now rather than when the cache expires, and
    /// disconnects the stream's publisher if its key is no longer valid. Returns true when
    /// a publisher was disconnected.
    distributed func keyRevoked(app: String, name: String) async throws -> Bool
    /// The streams this node publishes, with their measured facts (what its heartbeat says).
    distributed func streams() async throws -> [StreamReport]
}
