import Cluster
import Foundation
import Logging
import Media
import Metrics
import Session
import Synchronization

/// The node's live sessions, every protocol's publishers and viewers, for operators:
/// `GET /api/v1/sessions` lists them and `DELETE /api/v1/sessions/{id}` kicks one
/// (`NodeAdminAPI`). An observer of the admission (`SessionEvent`), so it sees exactly the
/// sessions the admission accepted, each from its start to its end.
///
/// Each start and end is an info line with the session's id, path, protocol and remote
/// address, and at the end its duration, bytes and why it ended; lines are rate-limited per
/// remote address (`LogRateLimiter`).
///
/// Bounded: beyond `maxSessions` a session is served but not listed (and counted in
/// `estuary_sessions_unlisted_total`); the node's connection limits keep it far below.
final class SessionTable: SessionObserver, Sendable {
    private struct Entry {
        var info: SessionReport
        var started: ContinuousClock.Instant
        var traffic: SessionTraffic?
        /// For a publisher whose protocol counts no traffic: the hub's bytes at its start.
        var hub: StreamHub?
        var hubBytesAtStart: Int
        /// The session's kick; nil where it cannot be ended from outside.
        var kick: SessionKick?
        /// The publisher's stream, to kick it by path.
        var stream: StreamPath?
    }

    private struct State {
        var sessions: [String: Entry] = [:]
    }

    static let defaultMaxSessions = 100_000
    /// The longest kick reason kept, in bytes (200 characters of up to 4 bytes each).
    static let maxReasonBytes = 800

    let maxSessions: Int
    private let state = Mutex(State())
    private let logger: Logger
    private let logLimiter = LogRateLimiter()

    init(logger: Logger, maxSessions: Int = SessionTable.defaultMaxSessions) {
        self.logger = logger
        self.maxSessions = max(1, maxSessions)
    }

    func observe(_ event: SessionEvent) async {
        switch event {
        case .publishStarted(let session):
            let kick: SessionKick? = session.canBeKicked ? { @Sendable reason in session.kick(reason) } : nil
            let entry = Entry(
                info: SessionReport(
                    id: session.sessionID.rawValue, kind: SessionKind.publish.rawValue, path: "\(session.hub.path)", protocol: session.transport.rawValue,
                    remoteAddress: session.remoteAddress, query: "\(session.query)", startedAt: session.startedAt, durationSeconds: 0, bytesIn: 0, bytesOut: 0
                ),
                started: .now, traffic: session.traffic, hub: session.traffic == nil ? session.hub : nil,
                hubBytesAtStart: session.traffic == nil ? session.hub.statistics.bytesIn : 0,
                kick: kick, stream: session.transport == .transcode || session.parent != nil ? nil : session.path
            )
            insert(entry)
        case .publishEnded(let session):
            remove(id: session.sessionID.rawValue, reason: session.endReason)
        case .playStarted(let session):
            let kick: SessionKick? = session.canBeKicked ? { @Sendable reason in session.kick(reason) } : nil
            let entry = Entry(
                info: SessionReport(
                    id: session.id.rawValue, kind: SessionKind.play.rawValue, path: "\(session.path)", protocol: session.transport.rawValue,
                    remoteAddress: session.remoteAddress, query: "\(session.query)", startedAt: session.startedAt, durationSeconds: 0, bytesIn: 0, bytesOut: 0
                ),
                started: .now, traffic: session.traffic, hub: nil, hubBytesAtStart: 0,
                kick: kick, stream: nil
            )
            insert(entry)
        case .playEnded(let session):
            remove(id: session.id.rawValue, reason: session.endReason)
        }
    }

    // MARK: Queries

    struct Filter: Sendable {
        var path: String?
        var `protocol`: String?
        var kind: SessionKind?
    }

    /// The live sessions matching `filter`, oldest first.
    func list(_ filter: Filter = Filter()) -> [SessionReport] {
        let now = ContinuousClock.now
        let entries = state.withLock { state in
            state.sessions.values.filter { entry in
                (filter.path.map { entry.info.path == $0 || entry.info.path.hasPrefix($0 + "/") } ?? true)
                    && (filter.protocol.map { entry.info.protocol == $0 } ?? true)
                    && (filter.kind.map { entry.info.kind == $0.rawValue } ?? true)
            }
        }
        return entries.map { Self.snapshot($0, now: now) }.sorted { ($0.startedAt, $0.id) < ($1.startedAt, $1.id) }
    }

    /// Per path, the live viewers by protocol and the bytes they were sent: one pass over the
    /// table, without the snapshots and the sort of `list` (`StreamMetricsSampler`).
    func viewerTotals() -> [String: (byProtocol: [String: Int], bytesOut: Int)] {
        state.withLock { state in
            var totals: [String: (byProtocol: [String: Int], bytesOut: Int)] = [:]
            for entry in state.sessions.values where entry.info.kind == SessionKind.play.rawValue {
                totals[entry.info.path, default: ([:], 0)].byProtocol[entry.info.protocol, default: 0] += 1
                totals[entry.info.path, default: ([:], 0)].bytesOut += entry.traffic?.sent ?? 0
            }
            return totals
        }
    }

    func session(_ id: String) -> SessionReport? {
        state.withLock { $0.sessions[id] }.map { Self.snapshot($0, now: .now) }
    }

    var count: Int { state.withLock { $0.sessions.count } }

    enum KickResult: Equatable {
        case kicked
        case notFound
        /// A session that ends only with its stream (a transcoder's rung).
        case notKickable
    }

    /// Ends session `id` with `reason` (its client is told where the protocol can).
    func kick(_ id: String, reason: String) -> KickResult {
        let entry = state.withLock { $0.sessions[id] }
        guard let entry else { return .notFound }
        guard let kick = entry.kick else { return .notKickable }
        logger.notice("kicking session", metadata: ["session": "\(id)", "reason": "\(reason)"])
        Counter(label: "estuary_sessions_kicked_total").increment()
        kick(reason)
        return .kicked
    }

    /// Kicks the publisher of `path`, if it has a session here.
    func kickPublisher(of path: StreamPath, reason: String) -> Bool {
        let id = state.withLock { state in
            state.sessions.first { $0.value.stream == path }?.key
        }
        guard let id else { return false }
        return kick(id, reason: reason) == .kicked
    }

    // MARK: Table

    private func insert(_ entry: Entry) {
        let inserted = state.withLock { state -> Bool in
            guard state.sessions.count < maxSessions else { return false }
            state.sessions[entry.info.id] = entry
            return true
        }
        guard inserted else {
            Counter(label: "estuary_sessions_unlisted_total").increment()
            return
        }
        log(entry, ended: nil)
    }

    private func remove(id: String, reason: SessionEndReason?) {
        let entry = state.withLock { $0.sessions.removeValue(forKey: id) }
        if let entry { log(entry, ended: reason ?? .left) }
    }

    private static func snapshot(_ entry: Entry, now: ContinuousClock.Instant) -> SessionReport {
        var info = entry.info
        let elapsed = now - entry.started
        info.durationSeconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        if let traffic = entry.traffic {
            info.bytesIn = traffic.received
            info.bytesOut = traffic.sent
            info.link = traffic.link
        } else if let hub = entry.hub {
            info.bytesIn = max(0, hub.statistics.bytesIn - entry.hubBytesAtStart)
        }
        return info
    }

    /// The start's line, or with `ended` the end's.
    private func log(_ entry: Entry, ended: SessionEndReason?) {
        let verdict = logLimiter.check(entry.info.remoteAddress)
        guard verdict.allowed else { return }
        var metadata: Logger.Metadata = [
            "session": "\(entry.info.id)", "stream": "\(entry.info.path)", "protocol": "\(entry.info.protocol)",
            "from": "\(entry.info.remoteAddress)",
        ]
        if !entry.info.query.isEmpty { metadata["query"] = "\(entry.info.query)" }
        if verdict.suppressed > 0 { metadata["linesHeldBack"] = "\(verdict.suppressed)" }
        let kind = entry.info.kind == SessionKind.publish.rawValue ? "publisher" : "viewer"
        if let ended {
            let info = Self.snapshot(entry, now: .now)
            metadata["duration"] = "\(String(format: "%.1f", info.durationSeconds)) s"
            metadata["bytesIn"] = "\(info.bytesIn)"
            metadata["bytesOut"] = "\(info.bytesOut)"
            metadata["reason"] = "\(ended)"
            logger.info("\(kind) session ended", metadata: metadata)
        } else {
            logger.info("\(kind) session started", metadata: metadata)
        }
    }
}
