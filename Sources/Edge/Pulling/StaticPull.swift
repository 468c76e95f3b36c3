import Logging
import Media
import Metrics
import NIOConcurrencyHelpers
import NIOCore
import Session

/// A stream the node pulls from another server (an HTTP-FLV or RTMP origin) and publishes
/// as its own, for as long as the node runs: `pulls` in the configuration.
///
/// The pull is a publisher like any other: once the origin answers with media, it asks the
/// node's `SessionAdmission` to publish `path` (transport `.pull`), so the stream is
/// segmented for HLS, transcoded, put on the bus, forwarded and announced as if an encoder
/// had pushed it, and a local publisher with the same credentials may not take it over
/// unnoticed. When the origin ends the stream, fails, or sends no media for
/// `stallTimeout`, the pull unpublishes (viewers wait through the stream's grace period, as
/// for a publisher that reconnects) and tries again after 1 s, doubling to 30 s.
public final class StaticPull: Sendable {
    /// What `GET /api/v1/pulls` shows of a pull.
    public struct Status: Sendable, Codable, Equatable {
        public enum State: String, Sendable, Codable {
            case connecting, pulling, backingOff = "backing-off", stopped
        }
        public var stream: String
        public var source: String
        public var state: State
        public var connects = 0
        public var framesReceived = 0
        public var lastError: String?
    }

    public struct Configuration: Sendable {
        public var connectTimeout: Duration = .seconds(5)
        /// No media for this long: the origin is dropped and asked again.
        public var stallTimeout: Duration = .seconds(5)
        public var maxTagBytes = 8 << 20
        public var firstBackoff: Duration = .seconds(1)
        public var maxBackoff: Duration = .seconds(30)

        public init() {}
    }

    public let path: StreamPath
    /// The origin's URL of the stream.
    public let source: String
    private let admission: any SessionAdmission
    private let configuration: Configuration
    private let connector: UpstreamConnector
    private let status: NIOLockedValueBox<Status>
    private let task = NIOLockedValueBox<Task<Void, Never>?>(nil)

    /// Starts pulling `source` into `path`.
    public init(path: StreamPath, source: String, admission: any SessionAdmission, configuration: Configuration = .init(), logger: Logger) {
        self.path = path
        self.source = source
        self.admission = admission
        self.configuration = configuration
        self.connector = UpstreamConnector(timeout: configuration.connectTimeout, maxTagBytes: configuration.maxTagBytes)
        self.status = NIOLockedValueBox(Status(stream: "\(path)", source: Self.redacted(source), state: .connecting))
        var logger = logger
        logger[metadataKey: "stream"] = "\(path)"
        logger[metadataKey: "pull"] = "\(Self.redacted(source))"
        let task = Task { [self] in await self.run(logger: logger) }
        self.task.withLockedValue { $0 = task }
        PullMetrics.active.increment()
    }

    public var currentStatus: Status { status.withLockedValue { $0 } }

    public func stop() {
        task.withLockedValue { $0 }?.cancel()
    }

    /// Waits for the pull to finish after `stop()`.
    public func stopped() async {
        await task.withLockedValue { $0 }?.value
    }

    /// The source without its query (it may carry a token): for logs and the admin API.
    static func redacted(_ source: String) -> String {
        source.split(separator: "?", maxSplits: 1).first.map(String.init) ?? source
    }

    private func run(logger: Logger) async {
        var backoff = Backoff(first: configuration.firstBackoff, max: configuration.maxBackoff)
        while !Task.isCancelled {
            status.withLockedValue { $0.state = .connecting; $0.connects += 1 }
            let outcome = await pullOnce(logger: logger)
            guard !Task.isCancelled else { break }
            let (frames, failure): (Int, String?) = switch outcome {
            case .ended(let frames): (frames, nil)
            case .failed(let why, let frames): (frames, why)
            }
            // It had been pulling: start again from the first step.
            if frames > 0 { backoff.reset() }
            let delay = backoff.next()
            status.withLockedValue { $0.lastError = failure ?? "the origin ended the stream"; $0.state = .backingOff }
            if let failure {
                PullMetrics.failures.increment()
                logger.warning("pull failed; retrying in \(delay)", metadata: ["reason": "\(failure)"])
            } else {
                logger.notice("the origin ended the stream; asking again in \(delay)")
            }
            try? await Task.sleep(for: delay)
        }
        status.withLockedValue { $0.state = .stopped }
        PullMetrics.active.decrement()
        logger.info("pull stopped")
    }

    private enum Outcome {
        /// The origin ended the stream cleanly after this many frames.
        case ended(Int)
        case failed(String, Int)
    }

    private struct Stalled: Error {}
    private struct Evicted: Error {}

    /// One connection to the origin, from the request to its end.
    private func pullOnce(logger: Logger) async -> Outcome {
        let feed: any UpstreamFeed
        switch await connector.open(source) {
        case .media(let opened): feed = opened
        case .notFound: return .failed("the origin does not have the stream", 0)
        case .failed(let why): return .failed(why, 0)
        }
        let evicted = NIOLockedValueBox(false)
        let remote = Self.redacted(source)
        let request = PublishRequest(path: path, query: StreamQuery(""), remoteAddress: remote, transport: .pull, evict: { evicted.withLockedValue { $0 = true } })
        let session: PublishSession
        switch await admission.publish(request) {
        case .accepted(let accepted):
            session = accepted
        case .refused(let refusal):
            // Close the origin's connection: run the feed in a task and cancel it at once.
            let drop = Task { try await feed.run { _ in } }
            drop.cancel()
            return .failed("the node refused the stream: \(refusal.description)", 0)
        }
        status.withLockedValue { $0.state = .pulling; $0.lastError = nil }
        PullMetrics.connected.increment()
        logger.info("pulling into the node")
        let hub = session.hub
        let publisher = session.id
        let traffic = request.traffic
        let lastMedia = NIOLockedValueBox(NIODeadline.now())
        let frames = NIOLockedValueBox(0)
        let stall = TimeAmount(configuration.stallTimeout)
        let status = status
        let outcome: Outcome
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await feed.run { batch in
                        var bytes = 0
                        for frame in batch {
                            hub.publish(frame, publisher: publisher)
                            bytes += frame.payload.readableBytes
                        }
                        // The session's bytes in, once per batch (its media, as the origin sent it).
                        traffic.received(bytes)
                        if batch.contains(where: { $0.kind != .script && !$0.isSequenceHeader }) {
                            lastMedia.withLockedValue { $0 = .now() }
                        }
                        frames.withLockedValue { $0 += batch.count }
                        status.withLockedValue { $0.framesReceived += batch.count }
                        // One read of an origin that merged its writes: wake viewers now.
                        hub.flush(force: true)
                    }
                }
                group.addTask {
                    // The watchdog: media must keep coming, and the stream must still be ours
                    // (a local publisher with the same credentials may take it over).
                    while true {
                        try await Task.sleep(for: .milliseconds(250))
                        if evicted.withLockedValue({ $0 }) { throw Evicted() }
                        if NIODeadline.now() - lastMedia.withLockedValue({ $0 }) >= stall { throw Stalled() }
                    }
                }
                try await group.next()
                group.cancelAll()
            }
            outcome = .ended(frames.withLockedValue { $0 })
        } catch is Stalled {
            outcome = .failed("no media for \(configuration.stallTimeout)", frames.withLockedValue { $0 })
        } catch is Evicted {
            outcome = .failed("another publisher took the stream over", frames.withLockedValue { $0 })
        } catch {
            outcome = .failed(Task.isCancelled ? "stopped" : ConnectionFailure.describe(error), frames.withLockedValue { $0 })
        }
        hub.flush(force: true)
        switch outcome {
        case .ended: session.end(.left)
        case .failed(let why, _): session.end(.failed(why))
        }
        return outcome
    }
}

enum PullMetrics {
    /// Static pulls configured and running (pulling or retrying).
    static let active = Meter(label: "estuary_pulls_active")
    /// Origin connections that delivered the stream into the node.
    static let connected = Counter(label: "estuary_pull_connections_total")
    /// Origin connections refused, failed, stalled or dropped.
    static let failures = Counter(label: "estuary_pull_failures_total")
}
