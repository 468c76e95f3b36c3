import Logging
import Media
import Metrics
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
/// `kickMemory`. A request that names no live session (a media playlist or segment URL
/// given to a player directly, or a session expired) goes through the admission too, as its
/// client (`clientKey`: address, rendition, carried query), whose session then stands for
/// its later requests: a player reloads the URL it was given, and must not open a session
/// per reload, nor reach the media without the token a master would have asked for.
///
/// Sessions reach the admission's observers as any viewer does (`playStarted`/`playEnded`):
/// `/api/v1/sessions`, `/metrics`, the drain's viewer count, the relay's viewer report.
///
/// Bounded: `maxSessions` live sessions, and the per-address cap of the HTTP listener's
/// connections (`maxConnectionsPerAddress`, loopback exempt unless `limitLoopback`) for the
/// sessions of one client host. An HLS player holds no connection, so the listener's own cap
/// does not bound how many sessions one host opens (a master per request, a media playlist
/// per query); without this, one host could fill the table and lock every other player out.
/// Past either, a new player is refused as unavailable (503), logged and counted
/// (`estuary_hls_sessions_refused_total{reason}`). `maxKicked` remembered kicks.
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
        /// The client a session opened for requests that named none stands for (`clientKey`).
        var client: String?
        /// Its client's host (`host(of:)`), whose count it holds in `perHost`.
        var host: String
    }

    private struct State {
        var sessions: [String: Entry] = [:]
        var kicked: [String: ContinuousClock.Instant] = [:]
        /// Sessions opened for requests that named none, by client.
        var byClient: [String: String] = [:]
        /// Kicked clients of such sessions: refused for `kickMemory`, as kicked ids are.
        var kickedClients: [String: ContinuousClock.Instant] = [:]
        /// Live sessions by client host; only hosts with sessions (bounded by `maxSessions`).
        var perHost: [String: Int] = [:]
        var limits = ConnectionLimits()
        var admission: (any SessionAdmission)?

        /// Takes `id` out of the table, and its count out of its host's.
        mutating func remove(_ id: String) -> Entry? {
            guard let entry = sessions.removeValue(forKey: id) else { return nil }
            if let client = entry.client, byClient[client] == id { byClient[client] = nil }
            let remaining = perHost[entry.host, default: 1] - 1
            perHost[entry.host] = remaining > 0 ? remaining : nil
            return entry
        }

        /// Why a new session of `host` is refused now, or nil.
        func refusal(host: String, maxSessions: Int) -> Refusal? {
            if sessions.count >= maxSessions { return .nodeFull }
            if let limit = limits.maxConnectionsPerAddress, perHost[host, default: 0] >= limit,
               limits.limitLoopback || !HLSSessions.isLoopback(host) {
                return .addressFull(limit)
            }
            return nil
        }
    }

    /// Why a new session is refused before the admission is asked.
    enum Refusal {
        case nodeFull
        case addressFull(Int)

        var metric: String {
            switch self {
            case .nodeFull: "node_limit"
            case .addressFull: "address_limit"
            }
        }

        var refusal: SessionRefusal {
            switch self {
            case .nodeFull: .unavailable("this node serves as many HLS players as it can; try again later")
            case .addressFull(let limit): .unavailable("\(limit) HLS players are open from this address, the most allowed; try again later")
            }
        }
    }

    public let idleLimit: Duration
    public let maxSessions: Int
    public static let maxKicked = 4096
    public static let kickMemory: Duration = .seconds(60)
    private let state = Mutex(State())
    private let logger: Logger
    /// Refusal lines: 20 per 10 s per host, the rest counted.
    private let logLimiter = LogRateLimiter(burst: 20, window: .seconds(10))

    public init(idleLimit: Duration, maxSessions: Int = 100_000, limits: ConnectionLimits = ConnectionLimits(), logger: Logger = Logger(label: "estuary.hls")) {
        self.idleLimit = idleLimit
        self.maxSessions = max(1, maxSessions)
        self.logger = logger
        state.withLock { $0.limits = limits }
    }

    /// The per-address cap new sessions are held to (a reload may change it; sessions already
    /// open stay).
    public func setLimits(_ limits: ConnectionLimits) {
        state.withLock { $0.limits = limits }
    }

    /// 127.0.0.0/8 and ::1, bracketed or not, and IPv4-mapped loopback.
    static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return ConnectionLimiter.isLoopback(bare)
    }

    private func refused(_ refusal: Refusal, host: String) -> Result<String, SessionRefusal> {
        Counter(label: "estuary_hls_sessions_refused_total", dimensions: [("reason", refusal.metric)]).increment()
        let verdict = logLimiter.check(host)
        if verdict.allowed {
            logger.notice("HLS player refused", metadata: [
                "from": "\(host)", "reason": "\(refusal.refusal.description)", "linesHeldBack": "\(verdict.suppressed)",
            ])
        }
        return .failure(refusal.refusal)
    }

    /// The node's admission, set once it exists (it is made after the relay's parts).
    public func setAdmission(_ admission: any SessionAdmission) {
        state.withLock { $0.admission = admission }
    }

    var admission: (any SessionAdmission)? { state.withLock { $0.admission } }

    /// Whether `id` names a live session (of `stream`, when given: a session admitted for
    /// one stream opens no other), and marks it as used now.
    public func lookup(_ id: String, stream: StreamPath? = nil, now: ContinuousClock.Instant = .now) -> Lookup {
        state.withLock { state in
            if let entry = state.sessions[id], stream == nil || entry.stream == stream {
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

    /// Who asks, for a request that names no session (a media playlist or segment URL a
    /// player was given directly, or one whose session expired): the address's host, the
    /// rendition and the query carried (a token). A player reloads the URL it was given, so
    /// its requests share one session, admitted once, instead of one per reload. Players
    /// behind one address with the same URL count as one.
    public static func clientKey(remoteAddress: String, path: RequestedRendition, carried: String) -> String {
        "\(host(of: remoteAddress))|\(path)|\(carried)"
    }

    /// An address without its port: `host:port` as the HTTP routes write it (an IPv6 host
    /// unbracketed, `2001:db8::1:6000`), or `[v6]:port`. The port is the last `:`-separated
    /// part when it is all digits; an address without a colon is its own host.
    public static func host(of address: String) -> Substring {
        if address.hasPrefix("["), let end = address.firstIndex(of: "]") {
            return address[...end]
        }
        guard let colon = address.lastIndex(of: ":") else { return address[...] }
        let port = address[address.index(after: colon)...]
        guard !port.isEmpty, port.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return address[...] }
        return address[..<colon]
    }

    /// The session of `client` (`clientKey`): the one opened for its earlier requests while
    /// it lives, or one opened now through the admission; refused for `kickMemory` after a kick.
    public func session(ofClient client: String, _ path: RequestedRendition, query: StreamQuery, remoteAddress: String, now: ContinuousClock.Instant = .now) async -> Result<String, SessionRefusal> {
        enum Known { case live(String), kicked, unknown }
        let known = state.withLock { state -> Known in
            if let id = state.byClient[client], state.sessions[id] != nil {
                state.sessions[id]?.lastRequest = now
                return .live(id)
            }
            if let at = state.kickedClients[client], now - at < Self.kickMemory { return .kicked }
            return .unknown
        }
        switch known {
        case .live(let id): return .success(id)
        case .kicked: return .failure(.denied("this HLS session was ended by an operator"))
        case .unknown: return await open(path, query: query, remoteAddress: remoteAddress, client: client)
        }
    }

    /// Admits a new player of `path`: the refusal, or the session opened for it (standing
    /// for `client`'s later requests, when given).
    public func open(_ path: RequestedRendition, query: StreamQuery, remoteAddress: String, client: String? = nil) async -> Result<String, SessionRefusal> {
        guard let admission else { return .failure(.unavailable("HLS is not ready")) }
        let host = String(Self.host(of: remoteAddress))
        let maxSessions = maxSessions
        if let refusal = (state.withLock { $0.refusal(host: host, maxSessions: maxSessions) }) {
            return refused(refusal, host: host)
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
        enum Insertion { case inserted, refused(Refusal), existing(String) }
        let insertion = state.withLock { state -> Insertion in
            // Requests of one client at once were admitted together: the first to get here
            // stands for it, the others' sessions are dropped before they start.
            if let client, let existing = state.byClient[client], state.sessions[existing] != nil {
                state.sessions[existing]?.lastRequest = .now
                return .existing(existing)
            }
            if let refusal = state.refusal(host: host, maxSessions: maxSessions) { return .refused(refusal) }
            state.sessions[id.rawValue] = Entry(session: session, stream: hub.path.stream, lastRequest: .now, client: client, host: host)
            state.perHost[host, default: 0] += 1
            if let client { state.byClient[client] = id.rawValue }
            return .inserted
        }
        switch insertion {
        case .refused(let refusal):
            return refused(refusal, host: host)
        case .existing(let existing):
            return .success(existing)
        case .inserted:
            await session.start()
            return .success(id.rawValue)
        }
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
                if let removed = state.remove(id) { ended.append(removed.session) }
            }
            state.kicked = state.kicked.filter { now - $0.value < Self.kickMemory }
            state.kickedClients = state.kickedClients.filter { now - $0.value < Self.kickMemory }
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
            guard let entry = state.remove(id) else { return nil }
            if state.kicked.count >= Self.maxKicked {
                state.kicked.removeAll(keepingCapacity: true)
            }
            state.kicked[id] = .now
            if let client = entry.client {
                if state.kickedClients.count >= Self.maxKicked {
                    state.kickedClients.removeAll(keepingCapacity: true)
                }
                state.kickedClients[client] = .now
            }
            return entry.session
        }
        session?.end(.left)  // the kick noted its reason first
    }
}
