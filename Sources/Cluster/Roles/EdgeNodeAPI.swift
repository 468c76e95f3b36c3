import Distributed

/// An edge as the coordinator sees it: a node serving players from streams it pulls from
/// upstream servers. Each edge joined to a cluster (`--role edge --nats …`) hosts one,
/// under `RoleAddress.edge`.
@Resolvable
public protocol EdgeNodeAPI: DistributedActor where ActorSystem == NodeActorSystem {
    /// The streams this edge pulls right now: each with the upstream it pulls from and its
    /// viewers here (all renditions and protocols).
    distributed func pulls() async throws -> [StreamReport]
}
