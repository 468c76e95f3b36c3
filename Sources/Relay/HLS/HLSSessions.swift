import Logging
import Media
import Metrics
import NIOCore
import Session
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

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
        /// Its client's host as the cap counts it (`clientHost(of:)`): its count in `perHost`,
        /// and the only host whose requests the session's id stands for.
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

        /// Why a new session of `host` (`clientHost(of:)`; `loopback` when it is) is refused
        /// now, or nil.
        func refusal(host: String, loopback: Bool, maxSessions: Int) -> Refusal? {
            if sessions.count >= maxSessions { return .nodeFull }
            if let limit = limits.maxConnectionsPerAddress, perHost[host, default: 0] >= limit,
               limits.limitLoopback || !loopback {
                return .addressFull(limit)
            }
            return nil
        }
    }

    /// Why a new session is refused before the admission is asked.
    enum Refusal {
        case notReady
        case nodeFull
        case addressFull(Int)

        var metric: String {
            switch self {
            case .notReady: "not_ready"
            case .nodeFull: "node_limit"
            case .addressFull: "address_limit"
            }
        }

        var refusal: SessionRefusal {
            switch self {
            case .notReady: .unavailable("HLS is not ready")
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

    /// Whether an address's host (`host(of:)`) is loopback: 127.0.0.0/8 and ::1, bracketed or
    /// not, and IPv4-mapped loopback.
    static func isLoopback(_ host: Substring) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? host.dropFirst().dropLast() : host
        return ConnectionLimiter.isLoopback(String(bare))
    }

    /// The client host the per-host cap counts, of an address as the routes write it: IPv4 as
    /// it is (an IPv4-mapped IPv6 address too, so a dual-stack listener does not give one
    /// client two shares), and IPv6 by its /64, which one host has whole and can draw a new
    /// address from for every request.
    public static func clientHost(of address: String) -> String {
        var host = host(of: address)
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        if let zone = host.firstIndex(of: "%") { host = host[..<zone] }
        guard host.contains(":") else { return String(host) }
        if host.lowercased().hasPrefix("::ffff:"), host.contains(".") { return String(host.dropFirst(7)) }
        var address = in6_addr()
        guard inet_pton(AF_INET6, String(host), &address) == 1 else { return String(host) }
        let prefix = withUnsafeBytes(of: &address) { bytes in
            stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        }
        return prefix.joined(separator: ":") + "::/64"
    }

    private func refused(_ refusal: Refusal, host: String) -> Result<String, SessionRefusal> {
        Counter(label: "estuary_hls_sessions_refused_total", dimensions: [("reason", refusal.metric)]).increment()
        log("HLS player refused", from: host, refusal.refusal.description, key: {
            if case .addressFull = refusal { return host }
            // Node-wide refusals: one budget of lines, whatever the number of hosts.
            return refusal.metric
        }())
        return .failure(refusal.refusal)
    }

    /// A refusal's line, at most 20 per 10 s per `key`; the rest counted.
    private func log(_ line: String, from host: String, _ reason: String, key: String) {
        let verdict = logLimiter.check(key)
        guard verdict.allowed else {
            Counter(label: "estuary_log_lines_held_back_total", dimensions: [("source", "hls")]).increment()
            return
        }
        logger.notice("\(line)", metadata: ["from": "\(host)", "reason": "\(reason)", "linesHeldBack": "\(verdict.suppressed)"])
    }

    /// A kicked session's or client's request, refused: logged per host.
    private func refusedKicked(host: String) {
        log("HLS request refused", from: host, "its session was ended by an operator", key: "kicked|\(host)")
    }

    /// The node's admission, set once it exists (it is made after the relay's parts).
    public func setAdmission(_ admission: any SessionAdmission) {
        state.withLock { $0.admission = admission }
    }

    var admission: (any SessionAdmission)? { state.withLock { $0.admission } }

    /// Whether `id` names a live session (of `stream`, when given: a session admitted for
    /// one stream opens no other; asked from `remoteAddress`'s host, when given: a session's
    /// URL passed to other hosts does not let them in as one viewer), and marks it as used now.
    /// A request from another host is admitted afresh (a phone that changed networks).
    public func lookup(_ id: String, stream: StreamPath? = nil, remoteAddress: String? = nil, now: ContinuousClock.Instant = .now) -> Lookup {
        let host = remoteAddress.map(Self.clientHost(of:))
        let found = state.withLock { state -> Lookup in
            if let entry = state.sessions[id], stream == nil || entry.stream == stream, host == nil || entry.host == host {
                state.sessions[id]?.lastRequest = now
                return .live
            }
            if let at = state.kicked[id], now - at < Self.kickMemory { return .kicked }
            return .unknown
        }
        if found == .kicked { refusedKicked(host: host ?? "?") }
        return found
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
        case .kicked:
            refusedKicked(host: Self.clientHost(of: remoteAddress))
            return .failure(.denied("this HLS session was ended by an operator"))
        case .unknown: return await open(path, query: query, remoteAddress: remoteAddress, client: client)
        }
    }

    /// Admits a new player of `path`: the refusal, or the session opened for it (standing
    /// for `client`'s later requests, when given).
    public func open(_ path: RequestedRendition, query: StreamQuery, remoteAddress: String, client: String? = nil) async -> Result<String, SessionRefusal> {
        let host = Self.clientHost(of: remoteAddress)
        guard let admission else { return refused(.notReady, host: host) }
        let loopback = Self.isLoopback(Self.host(of: remoteAddress))
        let maxSessions = maxSessions
        if let refusal = (state.withLock { $0.refusal(host: host, loopback: loopback, maxSessions: maxSessions) }) {
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
            if let refusal = state.refusal(host: host, loopback: loopback, maxSessions: maxSessions) { return .refused(refusal) }
            state.sessions[id.rawValue] = Entry(session: session, stream: hub.path.stream, lastRequest: .now, client: client, host: host)
            state.perHost[host, default: 0] += 1
            if let client { state.byClient[client] = id.rawValue }
            return .inserted
        }
        switch insertion {
        case .refused(let refusal):
            await Self.drop(session)
            return refused(refusal, host: host)
        case .existing(let existing):
            await Self.drop(session)
            return .success(existing)
        case .inserted:
            await session.start()
            return .success(id.rawValue)
        }
    }

    /// A session the admission accepted that is not kept (another request of its client got
    /// in first, or the table filled meanwhile): started and ended at once, so that what the
    /// admission told of it (a hook's `on_play`) is closed (`on_stop`), not left open.
    private static func drop(_ session: PlaySession) async {
        await session.start()
        session.end(.left)
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
