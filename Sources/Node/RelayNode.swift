import Cluster
import Distributed
import Media
import Relay

/// The relay role as a distributed actor (`RelayNodeAPI`, named `RoleAddress.relay`): it
/// answers what the node plays, for the heartbeat and for the admin API's live view of
/// the node.
///
/// Viewers are RTMP and HTTP-FLV players (`StreamHub.Statistics.viewers`) and HLS players
/// (their sessions, `HLSSessions`), per stream: a rung's players (`abr/demo/480p`) count for
/// the rung's stream (`abr/demo`). A stream whose name merely ends in `_480p` is a stream
/// of its own.
distributed actor RelayNode: RelayNodeAPI {
    typealias ActorSystem = NodeActorSystem

    private let registry: StreamRegistry
    private let hlsSessions: HLSSessions?

    init(registry: StreamRegistry, hlsSessions: HLSSessions? = nil, actorSystem: NodeActorSystem) {
        self.registry = registry
        self.hlsSessions = hlsSessions
        self.actorSystem = actorSystem
    }

    distributed func streams() async -> [StreamReport] {
        let hls = (hlsSessions?.viewers() ?? [:]).map { (RenditionPath.source($0.key), $0.value) }
        return Self.reports(viewers: await registry.streams.map { ($0.key, $0.value.statistics.viewers) } + hls)
    }

    /// One report per stream, its renditions' viewers summed, in path order.
    static func reports(viewers: [(RenditionPath, Int)]) -> [StreamReport] {
        var byStream: [StreamPath: Int] = [:]
        for (path, count) in viewers {
            byStream[path.stream, default: 0] += count
        }
        return byStream
            .sorted { "\($0.key)" < "\($1.key)" }
            .map { StreamReport.playing(app: $0.key.app, name: $0.key.name, viewers: $0.value) }
    }
}
