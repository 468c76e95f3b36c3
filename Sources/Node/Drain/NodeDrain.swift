import Logging
import Media
import Metrics
import Session
import Synchronization

/// A node's graceful drain: once begun, the node takes no new sessions (publishes and plays
/// are refused as unavailable, `/readyz` answers 503 so load balancers look elsewhere),
/// asks every publisher that can be asked to reconnect elsewhere (Enhanced RTMP v2's
/// reconnect request), and waits, up to a grace period, for its publishers and viewers to
/// leave before the node shuts down. Publishers that cannot be asked, and viewers, stay
/// served until they leave or the grace ends.
///
/// Roles add their own work (`Participant`): a transcoder has its jobs moved to other
/// transcoders and waits until each was taken over.
///
/// It learns of sessions as an observer of the node's admission: the table holds one entry
/// per live publisher (bounded by the node's stream capacity) and a count of viewers.
final class NodeDrain: SessionObserver, Sendable {
    /// What starts a drain: an operator's `POST /api/v1/node/drain` or SIGTERM.
    struct Request: Sendable {
        var grace: Duration
        /// Where publishers are asked to go: a server URL (`rtmp://other:1935`) to which
        /// the stream's application is appended; nil sends them back to the URL they used,
        /// which a load balancer now routes to another node.
        var reconnectTo: String?
        var reason: String
    }

    /// What `GET /api/v1/node/drain` shows.
    struct Status: Sendable, Codable, Equatable {
        var draining: Bool
        var reason: String?
        var graceSeconds: Double?
        var elapsedSeconds: Double?
        var reconnectTo: String?
        /// Publishers still here, and how many of them were asked to reconnect.
        var publishers: Int
        var publishersAsked: Int
        var viewers: Int
    }

    /// A role's part of the drain: `begin` runs when the drain begins; the drain waits
    /// (within the grace) until `pending` is 0.
    struct Participant: Sendable {
        var name: String
        var begin: @Sendable (_ grace: Duration) async -> Void
        var pending: @Sendable () async -> Int
    }

    private struct PublisherKey: Hashable {
        var path: StreamPath
        var id: StreamHub.PublisherID
    }

    private struct State {
        var request: Request?
        var started: ContinuousClock.Instant?
        var publishers: [PublisherKey: PublishSession] = [:]
        var asked: Set<PublisherKey> = []
        var viewers = 0
        /// Set by a second SIGTERM: stop waiting.
        var hurried = false
        /// Registered as the node is assembled: one per role at most.
        var participants: [Participant] = []
    }

    private let state = Mutex(State())
    private let logger: Logger
    private let requests: AsyncStream<Request>
    private let requestSink: AsyncStream<Request>.Continuation

    init(logger: Logger) {
        self.logger = logger
        (requests, requestSink) = AsyncStream.makeStream(of: Request.self, bufferingPolicy: .bufferingNewest(1))
        Gauge(label: "estuary_draining").record(0)
    }

    /// Whether the node refuses new sessions.
    var isDraining: Bool { state.withLock { $0.request != nil } }

    /// Starts a drain; false (and nothing changes) when one is under way.
    @discardableResult
    func begin(_ request: Request) -> Bool {
        let started = state.withLock { state -> Bool in
            guard state.request == nil else { return false }
            state.request = request
            state.started = .now
            return true
        }
        guard started else { return false }
        Counter(label: "estuary_drains_total", dimensions: [("reason", request.reason == "SIGTERM" ? "signal" : "api")]).increment()
        Gauge(label: "estuary_draining").record(1)
        logger.notice("draining: no new sessions; publishers are asked to reconnect elsewhere", metadata: [
            "reason": "\(request.reason)", "grace": "\(request.grace)", "reconnectTo": "\(request.reconnectTo ?? "their own URL")",
        ])
        requestSink.yield(request)
        return true
    }

    /// Adds a role's part; at assembly, before any drain.
    func add(_ participant: Participant) {
        state.withLock { $0.participants.append(participant) }
    }

    var participants: [Participant] { state.withLock { $0.participants } }

    /// Stops waiting for sessions (a second SIGTERM).
    func hurry() {
        state.withLock { $0.hurried = true }
    }

    /// The drains requested, in order; the first one is the one that runs.
    var requested: AsyncStream<Request> { requests }

    func status() -> Status {
        state.withLock { state in
            Status(
                draining: state.request != nil, reason: state.request?.reason,
                graceSeconds: state.request.map { Self.seconds($0.grace) },
                elapsedSeconds: state.started.map { Self.seconds(.now - $0) },
                reconnectTo: state.request?.reconnectTo,
                publishers: state.publishers.count, publishersAsked: state.asked.intersection(state.publishers.keys).count,
                viewers: state.viewers
            )
        }
    }

    /// Asks every publisher that can be asked, and not yet asked, to reconnect.
    func askPublishersToMove() {
        let toAsk = state.withLock { state -> [(ReconnectRequester, String?)] in
            guard let request = state.request else { return [] }
            var toAsk: [(ReconnectRequester, String?)] = []
            for (key, session) in state.publishers where !state.asked.contains(key) {
                guard let requester = session.requestReconnect else { continue }
                state.asked.insert(key)
                // It leaves because of the drain: its end says so.
                session.noteEnding(.draining)
                toAsk.append((requester, Self.serverURL(request.reconnectTo, app: session.path.app)))
            }
            return toAsk
        }
        // Outside the lock: a requester schedules work on its connection's event loop.
        for (requester, url) in toAsk {
            requester(url)
        }
    }

    /// Whether the drain may end: no sessions and no participants' work left (`pending`),
    /// the grace is over, or a second SIGTERM.
    func isDone(now: ContinuousClock.Instant = .now, pending: Int = 0) -> Bool {
        state.withLock { state in
            guard let request = state.request, let started = state.started else { return false }
            return state.hurried || now - started >= request.grace || (state.publishers.isEmpty && state.viewers == 0 && pending == 0)
        }
    }

    /// Work the participants still have.
    func pending() async -> Int {
        var total = 0
        for participant in participants { total += await participant.pending() }
        return total
    }

    /// The server URL a publisher of `app` is sent to: `base/app`.
    static func serverURL(_ base: String?, app: String) -> String? {
        guard let base else { return nil }
        return base.hasSuffix("/") ? base + app : base + "/" + app
    }

    func observe(_ event: SessionEvent) async {
        switch event {
        case .publishStarted(let session) where session.transport == .pull || session.transport == .transcode || session.parent != nil,
             .publishEnded(let session) where session.transport == .pull || session.transport == .transcode || session.parent != nil:
            // The node's own static pulls and rungs: nobody to wait for (a transcoder's
            // jobs have their own part in the drain); a multitrack publisher's tracks move
            // with it.
            break
        case .playStarted(let session) where session.transport == .forward,
             .playEnded(let session) where session.transport == .forward:
            // The node's own pushes end with their streams, which the drain moves away.
            break
        case .publishStarted(let session):
            let draining = state.withLock { state in
                state.publishers[PublisherKey(path: session.path, id: session.id)] = session
                return state.request != nil
            }
            // Admitted just before the drain began: ask it too.
            if draining { askPublishersToMove() }
        case .publishEnded(let session):
            state.withLock { state in
                let key = PublisherKey(path: session.path, id: session.id)
                state.publishers[key] = nil
                state.asked.remove(key)
            }
        case .playStarted:
            state.withLock { $0.viewers += 1 }
        case .playEnded:
            state.withLock { $0.viewers = max(0, $0.viewers - 1) }
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
