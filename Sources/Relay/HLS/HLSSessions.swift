import Media
import NIOCore
import Session
import Synchronization

/// HLS viewers as sessions. An HLS player holds no connection: it fetches playlists and
/// segments, each request on its own. Its master playlist request goes through the node's
/// admission like any play (stream keys, tokens, capacity, drain: 403 and 503 as for
/// HTTP-FLV) and opens a session; its id (`v-…`) then travels in every URI of the playlists
/// the player is given (`?session=…`, with the other query parameters the request carried,
/// such as a token), so the player's later requests name it. A request naming a session
/// that has expired is admitted afresh. A session ends after `idleLimit` (three target
/// durations) without a request; a kicked one ends at once and its id is refused (403) for
/// `kickMemory`. A media playlist asked for directly, without a session, is served without
/// one (a player reloads the URL it was given, and would open a session per reload).
///
/// Sessions reach the admission's observers as any viewer does (`playStarted`/`playEnded`):
/// `/api/v1/sessions`, `/metrics`, the drain's viewer count, the relay's viewer report.
///
/// Bounded: `maxSessions` live sessions (past it, a new player is refused as unavailable)
/// and `maxKicked` remembered kicks.
public final class HLSSessions: Sendable {
    public enum Lookup: Sendable, Equatable {
        case live
        /// Kicked: refused (403).
        case kicked
        /// Unknown or expired: the request is admitted afresh.
        case unknown
    }

    private struct Entry {
        var session: PlaySession
        var stream: StreamPath
        var lastRequest: ContinuousClock.Instant
    }

    private struct State {
        var sessions: [String: Entry] = [:]
        var kicked: [String: ContinuousClock.Instant] = [:]
        var admission: (any SessionAdmission)?
    }

    public let idleLimit: Duration
    public let maxSessions: Int
    public static let maxKicked = 4096
    public static let kickMemory: Duration = .seconds(60)
    private let state = Mutex(State())

    public init(idleLimit: Duration, maxSessions: Int = 100_000) {
        self.idleLimit = idleLimit
        self.maxSessions = max(1, maxSessions)
    }

    /// The node's admission, set once it exists (it is made after the relay's parts).
    public func setAdmission(_ admission: any SessionAdmission) {
        state.withLock { $0.admission = admission }
    }

    var admission: (any SessionAdmission)? { state.withLock { $0.admission } }

    /// Whether `id` names a live session (and marks it as used now).
    public func lookup(_ id: String, now: ContinuousClock.Instant = .now) -> Lookup {
        state.withLock { state in
            if state.sessions[id] != nil {
                state.sessions[id]?.lastRequest = now
                return .live
            }
            if let at = state.kicked[id], now - at < Self.kickMemory { return .kicked }
            return .unknown
        }
    }

    /// Bytes sent to session `id` (a segment, a part).
    public func sent(_ bytes: Int, to id: String) {
        let traffic = state.withLock { $0.sessions[id]?.session.traffic }
        traffic?.sent(bytes)
    }

    /// Admits a new player of `path`: the refusal, or the session opened for it.
    public func open(_ path: RequestedRendition, query: StreamQuery, remoteAddress: String) async -> Result<String, SessionRefusal> {
        guard let admission else { return .failure(.unavailable("HLS is not ready")) }
        guard (state.withLock { $0.sessions.count }) < maxSessions else {
            return .failure(.unavailable("this node serves as many HLS players as it can; try again later"))
        }
        let id = SessionID.make(.play)
        let request = PlayRequest(
            path: path, query: query, remoteAddress: remoteAddress, transport: .hls,
            kick: { [weak self] _ in self?.kick(id.rawValue) }, sessionID: id
        )
        let session: PlaySession
        switch await admission.play(request) {
        case .refused(let refusal):
            return .failure(refusal)
        case .accepted(let accepted):
            session = accepted
        }
        let hub = session.hub
        // The bound holds here, where the table grows (the check above only spares the
        // admission's work); an accepted play holds nothing yet, so a refusal undoes nothing.
        let inserted = state.withLock { state -> Bool in
            guard state.sessions.count < maxSessions else { return false }
            state.sessions[id.rawValue] = Entry(session: session, stream: hub.path.stream, lastRequest: .now)
            return true
        }
        guard inserted else {
            return .failure(.unavailable("this node serves as many HLS players as it can; try again later"))
        }
        await session.start()
        return .success(id.rawValue)
    }

    /// Live HLS sessions by stream, for the relay's viewer report.
    public func viewers() -> [StreamPath: Int] {
        state.withLock { state in
            var counts: [StreamPath: Int] = [:]
            for entry in state.sessions.values { counts[entry.stream, default: 0] += 1 }
            return counts
        }
    }

    public var count: Int { state.withLock { $0.sessions.count } }

    /// Ends sessions idle for longer than `idleLimit`, and forgets old kicks. Called every
    /// second by `run`.
    public func expire(now: ContinuousClock.Instant = .now) async {
        let limit = idleLimit
        let ended = state.withLock { state -> [PlaySession] in
            var ended: [PlaySession] = []
            for (id, entry) in state.sessions where now - entry.lastRequest > limit {
                ended.append(entry.session)
                state.sessions[id] = nil
            }
            state.kicked = state.kicked.filter { now - $0.value < Self.kickMemory }
            return ended
        }
        for session in ended {
            session.end(.timedOut("no playlist or segment request for 3 target durations"))
        }
    }

    /// Sweeps idle sessions every second until the task is cancelled.
    public func run() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            await expire()
        }
    }

    /// Ends session `id` now (an operator's kick); its next request is refused.
    private func kick(_ id: String) {
        let session = state.withLock { state -> PlaySession? in
            guard let entry = state.sessions.removeValue(forKey: id) else { return nil }
            if state.kicked.count >= Self.maxKicked {
                state.kicked.removeAll(keepingCapacity: true)
            }
            state.kicked[id] = .now
            return entry.session
        }
        session?.end(.left)  // the kick noted its reason first
    }
}
