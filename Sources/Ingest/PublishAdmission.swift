import Logging
import Media
import Metrics
import RTMP

/// Decides who may publish: one publisher per stream, with takeover of an idle one.
///
/// A reconnecting encoder (mobile SDKs reconnect after every network change, often before
/// the server has noticed the old TCP connection is dead) takes over a stream whose
/// publisher has been silent for `HubConfiguration.publisherIdleTakeover`; the old session
/// is closed and viewers stay attached, with timestamps continuing. A second live encoder
/// on the same key is refused with `NetStream.Publish.BadName`, as in nginx-rtmp and SRS.
public struct PublishAdmission: Sendable {
    public let registry: StreamRegistry
    private let logger: Logger

    public init(registry: StreamRegistry, logger: Logger) {
        self.registry = registry
        self.logger = logger
    }

    public func publish(_ request: RTMPPublishRequest) async -> RTMPPublishDecision {
        // Two attempts: the hub found may end between lookup and attach (grace expiry).
        for _ in 0..<2 {
            let (hub, id) = await registry.hubForPublishing(request.path)
            switch hub.attachPublisher(id: id, evict: request.evict) {
            case .attached(let replacedIdle):
                if replacedIdle {
                    logger.notice("publisher from \(request.remoteAddress) took over idle stream \(request.path)")
                    IngestMetrics.takeovers.increment()
                }
                return .accept(hub: hub, id: id)
            case .busy(let idleFor):
                logger.notice("refusing second publisher for \(request.path) from \(request.remoteAddress): current one active \(idleFor) ago")
                return .reject(code: "NetStream.Publish.BadName", description: "\(request.path) is already being published")
            case .ended:
                continue
            }
        }
        return .reject(code: "NetStream.Publish.BadName", description: "\(request.path) is unavailable")
    }

    public func unpublished(_ path: StreamPath, id: StreamHub.PublisherID) async {
        await registry.publisherLeft(path, id: id)
    }
}

enum IngestMetrics {
    static let takeovers = Counter(label: "estuary_ingest_publisher_takeovers_total")
}
