import Distributed

/// A relay as the coordinator sees it: the node serving players. Each relay (and each
/// `--role all` node) hosts one, under `RoleAddress.relay`.
@Resolvable
public protocol RelayNodeAPI: DistributedActor where ActorSystem == NodeActorSystem {
    /// The streams this node plays right now, with their viewers (all renditions and
    /// protocols). The admin API asks for it to show live numbers rather than the last
    /// heartbeat's.
    distributed func streams() async throws -> [StreamReport]
}
