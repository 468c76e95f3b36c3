import Logging
import Media
import Metrics
import Session

/// Decides who may publish: one publisher per stream, with takeover of an idle one.
///
/// A reconnecting encoder (mobile SDKs reconnect after every network change, often before
/// the server has noticed the old TCP connection is dead) takes over a stream whose
/// publisher has been silent for `HubConfiguration.publisherIdleTakeover`; the old session
/// is closed and viewers stay attached, with timestamps continuing. A second live encoder
/// on the same key is refused as a bad name (RTMP: `NetStream.Publish.BadName`), as in
/// nginx-rtmp and SRS. Taking over, or resuming within the grace period, needs the first
/// publisher's credentials (its key, or its address without keys): anyone else is refused
/// the same way until the stream ends. Any protocol's publishers share these rules.
public struct PublishAdmission: Sendable {
    public let registry: StreamRegistry
    private let logger: Logger

    public init(registry: StreamRegistry, logger: Logger) {
        self.registry = registry
        self.logger = logger
    }

    public func publish(_ request: PublishRequest) async -> PublishDecision {
        guard let (hub, id, result) = await attach(.source(request.path), owner: Self.owner(of: request), evict: request.evict) else {
            return .refuse(.badName("\(request.path) is unavailable"))
        }
        switch result {
        case .attached(let replacedIdle):
            if replacedIdle {
                logger.notice("publisher from \(request.remoteAddress) took over idle stream \(request.path)")
                IngestMetrics.takeovers.increment()
            }
            return .accept(hub: hub, id: id)
        case .busy(let idleFor):
            logger.notice("refusing second publisher for \(request.path) from \(request.remoteAddress): current one active \(idleFor) ago")
            return .refuse(.badName("\(request.path) is already being published"))
        case .notOwner:
            logger.notice("refusing publisher for \(request.path) from \(request.remoteAddress): the stream's owner may resume it until its grace period ends")
            IngestMetrics.refusedTakeovers.increment()
            return .refuse(.badName("\(request.path) belongs to another publisher"))
        case .ended:
            return .refuse(.badName("\(request.path) is unavailable"))
        }
    }

    /// Attaches a publisher owned by `owner` to `path`'s hub (made if needed): the hub, the
    /// publisher's id and how the attach went; nil when both attempts found a hub that had
    /// ended (one may end between lookup and attach, at its grace's expiry). A publisher's
    /// stream and a multitrack publisher's tracks attach the same way.
    public func attach(
        _ path: RenditionPath, owner: String, evict: @escaping @Sendable () -> Void
    ) async -> (hub: StreamHub, id: StreamHub.PublisherID, result: StreamHub.AttachResult)? {
        for _ in 0..<2 {
            let (hub, id) = await registry.hubForPublishing(path)
            let result = hub.attachPublisher(id: id, owner: owner, evict: evict)
            if case .ended = result { continue }
            return (hub, id, result)
        }
        return nil
    }

    /// Who a publisher is, for taking over its own stream: its stream key when it has one
    /// (a phone changes address when it moves from Wi-Fi to mobile data), else its address.
    static func owner(of request: PublishRequest) -> String {
        owner(query: request.query, remoteAddress: request.remoteAddress)
    }

    /// The owner of a publisher with `query` from `remoteAddress` (a multitrack publisher's
    /// tracks are owned the same way, so a reconnect takes them back too).
    public static func owner(query: StreamQuery, remoteAddress: String) -> String {
        if let key = query.streamKey, !key.isEmpty {
            return "key:" + key
        }
        // `remoteAddress` is `host:port`; the port changes with every connection.
        let host = remoteAddress.split(separator: ":").dropLast().joined(separator: ":")
        return "address:" + (host.isEmpty ? remoteAddress : host)
    }

    /// The stream key in an owner made by ``owner(of:)``, or nil for an address owner.
    public static func key(ofOwner owner: String) -> String? {
        owner.hasPrefix("key:") ? String(owner.dropFirst(4)) : nil
    }

    public func unpublished(_ path: StreamPath, id: StreamHub.PublisherID) async {
        await registry.publisherLeft(path, id: id)
    }
}

enum IngestMetrics {
    static let takeovers = Counter(label: "estuary_ingest_publisher_takeovers_total")
    static let refusedTakeovers = Counter(label: "estuary_ingest_publisher_takeovers_refused_total")
}
