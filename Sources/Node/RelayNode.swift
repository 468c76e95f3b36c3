import Cluster
import Distributed
import Media
import Transcode

/// The relay role as a distributed actor (`RelayNodeAPI`, named `RoleAddress.relay`): it
/// answers what the node plays, for the heartbeat and for the admin API's live view of
/// the node.
///
/// Viewers are RTMP and HTTP-FLV players (`StreamHub.Statistics.viewers`; an HLS player
/// holds no connection to count). A rung's players count for its source stream
/// (`abr/demo_480p` for `abr/demo`), which is the stream the coordinator knows.
distributed actor RelayNode: RelayNodeAPI {
    typealias ActorSystem = NodeActorSystem

    private let registry: StreamRegistry
    private let ladders: [String: Ladder]

    init(registry: StreamRegistry, ladders: [String: Ladder], actorSystem: NodeActorSystem) {
        self.registry = registry
        self.ladders = ladders
        self.actorSystem = actorSystem
    }

    distributed func streams() async -> [StreamReport] {
        var viewers: [StreamPath: Int] = [:]
        for (path, hub) in await registry.streams {
            viewers[source(of: path), default: 0] += hub.statistics.viewers
        }
        return viewers
            .sorted { "\($0.key)" < "\($1.key)" }
            .map { path, count in StreamReport.playing(app: path.app, name: path.name, viewers: count) }
    }

    /// The source stream of a rung's path (`name_<rung>` with a rung of the application's
    /// ladder), or the path itself.
    private func source(of path: StreamPath) -> StreamPath {
        for rung in ladders[path.app]?.rungs ?? [] where path.name.hasSuffix("_\(rung.name)") {
            if let source = try? StreamPath(app: path.app, name: String(path.name.dropLast(rung.name.count + 1))) {
                return source
            }
        }
        return path
    }
}
