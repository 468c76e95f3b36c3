import Cluster
import Distributed
import Media

/// The relay role as a distributed actor (`RelayNodeAPI`, named `RoleAddress.relay`): it
/// answers what the node plays, for the heartbeat and for the admin API's live view of
/// the node.
///
/// Viewers are RTMP and HTTP-FLV players (`StreamHub.Statistics.viewers`; an HLS player
/// holds no connection to count), per hub: a rung's players are reported under the rung's
/// path (`abr/demo_480p`), and the coordinator, which knows the stream's renditions,
/// counts them for the stream.
distributed actor RelayNode: RelayNodeAPI {
    typealias ActorSystem = NodeActorSystem

    private let registry: StreamRegistry

    init(registry: StreamRegistry, actorSystem: NodeActorSystem) {
        self.registry = registry
        self.actorSystem = actorSystem
    }

    distributed func streams() async -> [StreamReport] {
        await registry.streams
            .sorted { "\($0.key)" < "\($1.key)" }
            .map { path, hub in StreamReport.playing(app: path.app, name: path.name, viewers: hub.statistics.viewers) }
    }
}
