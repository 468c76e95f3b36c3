import Logging
import Media
import RTMP
import Metrics
import NIOConcurrencyHelpers
import NIOCore

/// An edge's streams, pulled from upstream servers on demand.
///
/// When a viewer asks for a rendition the edge has no hub for (over any protocol: the
/// registry asks here), the edge requests it from the first healthy upstream
/// (`UpstreamHealth`), over HTTP-FLV or RTMP (`UpstreamFeed`), and feeds what arrives into one local hub with its GOP
/// cache. Every viewer of the rendition shares that hub, so a thousand viewers cost one
/// upstream connection. A rendition no upstream has (every one answers 404) is not found.
///
/// **Failover.** When the upstream connection fails (refused, reset, closed) or stalls
/// (no media for `stallTimeout`), the pull moves to the next upstream at once; the hub and
/// its viewers stay, and `FailoverFilter` and the hub's timestamp normaliser make the two
/// upstreams' frames one continuous, monotonic stream. Failed upstreams back off. When
/// every upstream says the stream is gone (404), or none has delivered media for
/// `staleAfter`, the hub ends, as a local stream does when its publisher leaves.
///
/// **Idle.** A pull stops once its hub has had no viewers (and no HLS requests) for
/// `idleGrace`.
public final class EdgeStreamSource: RemoteStreamSource {
    public struct Configuration: Sendable {
        /// How long an upstream may take to answer a request (connect included).
        public var connectTimeout: Duration = .seconds(2)
        /// An upstream that sends no media for this long is failed over from.
        public var stallTimeout: Duration = .milliseconds(1500)
        /// How long an unwatched pull is kept.
        public var idleGrace: Duration = .seconds(5)
        /// A pull that got no media from any upstream for this long ends.
        public var staleAfter: Duration = .seconds(10)
        /// The largest FLV tag accepted from an upstream.
        public var maxTagBytes = 8 << 20
        /// Upstream lookups at once; over it, a play is answered "not found" at once (a
        /// viewer could otherwise start one per name nobody has).
        public var maxConcurrentOpens = 64

        public init() {}
    }

    public let health: UpstreamHealth
    private let configuration: Configuration
    private let logger: Logger
    private let connector: UpstreamConnector
    /// The cluster's streams for `estuary://` upstreams (the bus), mirrored into a registry
    /// of their own; nil for an edge outside a cluster.
    private let cluster: (source: any RemoteStreamSource, registry: StreamRegistry)?
    private let pulls = NIOLockedValueBox<[RenditionPath: Pull]>([:])
    private let opening = NIOLockedValueBox(0)

    public init(
        upstreams: [Upstream],
        cluster: (any RemoteStreamSource)? = nil,
        configuration: Configuration = .init(),
        logger: Logger
    ) {
        self.health = UpstreamHealth(upstreams: upstreams)
        self.configuration = configuration
        self.logger = logger
        self.connector = UpstreamConnector(timeout: configuration.connectTimeout, maxTagBytes: configuration.maxTagBytes)
        self.cluster = cluster.map { ($0, StreamRegistry(serializers: [])) }
    }

    /// What an edge reports of one pull: the coordinator's view of the edge.
    public struct PullReport: Sendable {
        public var path: RenditionPath
        /// The upstream it pulls from now (nil between two).
        public var upstream: String?
        public var viewers: Int
    }

    /// The pulls running now, in path order.
    public func pullReports() -> [PullReport] {
        let upstreams = health.upstreams
        return pulls.withLockedValue { pulls in
            pulls.map { path, pull in
                PullReport(path: path, upstream: pull.upstream.withLockedValue { $0 }.map { upstreams[$0].description }, viewers: pull.hub.statistics.viewers)
            }
        }.sorted { "\($0.path)" < "\($1.path)" }
    }

    public func touch(_ path: RenditionPath) {
        let pull = pulls.withLockedValue { $0[path] }
        pull?.lastUse.withLockedValue { $0 = .now() }
    }

    public func open(_ path: RenditionPath, registry: StreamRegistry) async -> StreamHub? {
        let limit = configuration.maxConcurrentOpens
        let admitted = opening.withLockedValue { count -> Bool in
            guard count < limit else { return false }
            count += 1
            return true
        }
        guard admitted else {
            EdgeMetrics.connections("refused_open")
            return nil
        }
        defer { opening.withLockedValue { $0 -= 1 } }

        guard let (index, feed) = await connectFirst(path, after: nil) else { return nil }
        let (hub, publisher) = await registry.hubForPublishing(path)
        guard case .attached = hub.attachPublisher(id: publisher, owner: "edge", evict: {}) else {
            // Published here meanwhile (a static pull, say): use that.
            return await registry.hub(for: path)
        }
        let pull = Pull(hub: hub, publisher: publisher)
        pull.upstream.withLockedValue { $0 = index }
        pulls.withLockedValue { $0[path] = pull }
        EdgeMetrics.pulls.increment()
        var logger = logger
        logger[metadataKey: "stream"] = "\(path)"
        logger.info("pulling from upstream", metadata: ["upstream": "\(health.upstreams[index])"])
        let task = Task { [self] in
            await self.run(pull, path: path, first: (index, feed), logger: logger)
            pulls.withLockedValue { pulls in
                if pulls[path] === pull { pulls[path] = nil }
            }
            EdgeMetrics.pulls.decrement()
            pull.hub.flush(force: true)
            pull.hub.end()
            await registry.forget(path, hub: pull.hub)
        }
        pull.task.withLockedValue { $0 = task }
        watchIdle(pull, logger: logger)
        return hub
    }

    // MARK: Upstream connections

    /// The first upstream, in health order, that has `path`: nil when every one answered
    /// 404 or failed.
    private func connectFirst(_ path: RenditionPath, after: Int?) async -> (Int, any UpstreamFeed)? {
        for index in health.order(after: after) {
            guard !Task.isCancelled else { return nil }
            switch await request(path, from: index) {
            case .media(let feed):
                return (index, feed)
            case .notFound, .failed:
                continue
            }
        }
        return nil
    }

    private func request(_ path: RenditionPath, from index: Int) async -> UpstreamAnswer {
        let upstream = health.upstreams[index]
        let answer = upstream.scheme == .estuary ? await openFromCluster(path) : await connector.open(upstream.url(for: path))
        switch answer {
        case .media:
            health.succeeded(index)
            EdgeMetrics.connections("media")
        case .notFound:
            health.succeeded(index)
            EdgeMetrics.connections("not_found")
        case .failed:
            health.failed(index)
            EdgeMetrics.connections("error")
        }
        return answer
    }

    /// An `estuary://` upstream: the stream's mirror from the cluster's bus.
    private func openFromCluster(_ path: RenditionPath) async -> UpstreamAnswer {
        guard let cluster else { return .failed("estuary:// needs the cluster's bus (--nats)") }
        if let hub = await cluster.registry.hub(for: path), !hub.isEnded { return .media(HubFeed(hub: hub)) }
        guard let hub = await cluster.source.open(path, registry: cluster.registry) else { return .notFound }
        return .media(HubFeed(hub: hub))
    }

    // MARK: The pull

    final class Pull: Sendable {
        let hub: StreamHub
        let publisher: StreamHub.PublisherID
        let lastUse = NIOLockedValueBox(NIODeadline.now())
        let lastMedia = NIOLockedValueBox(NIODeadline.now())
        let upstream = NIOLockedValueBox<Int?>(nil)
        let task = NIOLockedValueBox<Task<Void, Never>?>(nil)
        let stopReason = NIOLockedValueBox<String?>(nil)

        init(hub: StreamHub, publisher: StreamHub.PublisherID) {
            self.hub = hub
            self.publisher = publisher
        }

        func stop(_ reason: String) {
            stopReason.withLockedValue { $0 = $0 ?? reason }
            task.withLockedValue { $0 }?.cancel()
        }
    }

    /// Feeds the hub from one upstream after another until the pull is stopped or the
    /// stream is gone everywhere.
    private func run(_ pull: Pull, path: RenditionPath, first: (Int, any UpstreamFeed), logger: Logger) async {
        var filter = FailoverFilter()
        var current: (index: Int, feed: any UpstreamFeed)? = first
        var lastIndex = first.0
        while !Task.isCancelled {
            if let (index, feed) = current {
                pull.upstream.withLockedValue { $0 = index }
                let outcome = await consume(feed, into: pull, filter: &filter)
                guard !Task.isCancelled else { break }
                lastIndex = index
                switch outcome {
                case .ended:
                    logger.notice("the upstream ended the stream; trying the others", metadata: ["upstream": "\(health.upstreams[index])"])
                case .failed(let why):
                    health.failed(index)
                    logger.warning("upstream lost, failing over", metadata: ["upstream": "\(health.upstreams[index])", "reason": "\(why)"])
                }
                EdgeMetrics.failovers.increment()
                current = nil
            }
            // Every upstream in turn, the one that just failed last.
            var everyoneSaidGone = true
            for index in health.order(after: lastIndex) {
                guard !Task.isCancelled else { break }
                let retryAt = health.retryAt(index)
                if retryAt > .now() {
                    // Backing off: wait for it only while the stream can still be saved.
                    let staleAt = pull.lastMedia.withLockedValue { $0 } + TimeAmount(configuration.staleAfter)
                    guard retryAt < staleAt else {
                        everyoneSaidGone = false
                        continue
                    }
                    try? await Task.sleep(for: .nanoseconds((retryAt - .now()).nanoseconds))
                }
                switch await request(path, from: index) {
                case .media(let feed):
                    current = (index, feed)
                    filter.newConnection()
                    logger.notice("pulling from upstream", metadata: ["upstream": "\(health.upstreams[index])"])
                case .notFound:
                    continue
                case .failed(let why):
                    everyoneSaidGone = false
                    logger.debug("upstream refused", metadata: ["upstream": "\(health.upstreams[index])", "reason": "\(why)"])
                    continue
                }
                break
            }
            if current != nil { continue }
            if everyoneSaidGone {
                pull.stopReason.withLockedValue { $0 = $0 ?? "no upstream has the stream any more" }
                break
            }
            if NIODeadline.now() - pull.lastMedia.withLockedValue({ $0 }) >= TimeAmount(configuration.staleAfter) {
                pull.stopReason.withLockedValue { $0 = $0 ?? "no upstream delivered media for \(configuration.staleAfter)" }
                break
            }
            // Every upstream failed just now: wait a little before the next round.
            try? await Task.sleep(for: .milliseconds(200))
        }
        logger.info("stopped pulling", metadata: ["reason": "\(pull.stopReason.withLockedValue { $0 } ?? "stopped")"])
    }

    private enum Outcome {
        /// The upstream ended the response cleanly: the stream ended there.
        case ended
        case failed(String)
    }

    private struct Stalled: Error {}

    /// Feeds one upstream connection into the hub until it ends, fails or stalls.
    private func consume(_ feed: any UpstreamFeed, into pull: Pull, filter: inout FailoverFilter) async -> Outcome {
        let stall = TimeAmount(configuration.stallTimeout)
        let connectionStart = NIODeadline.now()
        pull.lastMedia.withLockedValue { $0 = max($0, connectionStart) }
        let localFilter = NIOLockedValueBox(filter)
        defer { filter = localFilter.withLockedValue { $0 } }
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await feed.run { frames in
                        var media = false
                        for frame in frames {
                            guard localFilter.withLockedValue({ $0.admit(frame) }) else { continue }
                            pull.hub.publish(frame, publisher: pull.publisher)
                            if frame.kind != .script, !frame.isSequenceHeader { media = true }
                        }
                        if media { pull.lastMedia.withLockedValue { $0 = .now() } }
                        // Each batch is one read of an upstream that merged its writes
                        // already: merging again would only add up to an interval per tier.
                        pull.hub.flush(force: true)
                    }
                }
                group.addTask {
                    // The stall watchdog: media must keep coming.
                    while true {
                        try await Task.sleep(for: .milliseconds(100))
                        let last = pull.lastMedia.withLockedValue { $0 }
                        if NIODeadline.now() - max(last, connectionStart) >= stall { throw Stalled() }
                    }
                }
                // The feed ending (or throwing) ends the connection; so does a stall.
                try await group.next()
                group.cancelAll()
            }
            return .ended
        } catch is Stalled {
            return .failed("no media for \(configuration.stallTimeout)")
        } catch {
            return .failed(ConnectionFailure.describe(error))
        }
    }

    /// Stops a pull once nobody has watched it for `idleGrace`.
    private func watchIdle(_ pull: Pull, logger: Logger) {
        let grace = TimeAmount(configuration.idleGrace)
        Task {
            while !pull.hub.isEnded {
                try? await Task.sleep(for: .milliseconds(250))
                if pull.hub.statistics.holders > 0 {
                    pull.lastUse.withLockedValue { $0 = .now() }
                    continue
                }
                if NIODeadline.now() - pull.lastUse.withLockedValue({ $0 }) >= grace {
                    pull.stop("nobody watches it")
                    return
                }
            }
        }
    }
}
