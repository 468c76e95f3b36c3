import Cluster
import Distributed
import Edge
import Media

/// The edge role as a distributed actor (`EdgeNodeAPI`, named `RoleAddress.edge`): what
/// the edge pulls, from which upstream, for how many viewers, for the heartbeat and the
/// admin API's live view of the node. An edge hosts one when it joins a cluster (`--nats`).
distributed actor EdgeNode: EdgeNodeAPI {
    typealias ActorSystem = NodeActorSystem

    private let source: EdgeStreamSource

    init(source: EdgeStreamSource, actorSystem: NodeActorSystem) {
        self.source = source
        self.actorSystem = actorSystem
    }

    distributed func pulls() async -> [StreamReport] {
        Self.reports(source.pullReports())
    }

    /// One report per stream, its renditions' viewers summed; the upstream of its first
    /// rendition pulled (renditions of one stream come from the same upstreams).
    static func reports(_ pulls: [EdgeStreamSource.PullReport]) -> [StreamReport] {
        var order: [StreamPath] = []
        var byStream: [StreamPath: StreamReport] = [:]
        for pull in pulls {
            let stream = pull.path.stream
            if var report = byStream[stream] {
                report.viewers = (report.viewers ?? 0) + pull.viewers
                report.upstream = report.upstream ?? pull.upstream
                byStream[stream] = report
            } else {
                order.append(stream)
                byStream[stream] = .pulling(app: stream.app, name: stream.name, viewers: pull.viewers, upstream: pull.upstream)
            }
        }
        return order.compactMap { byStream[$0] }
    }
}
