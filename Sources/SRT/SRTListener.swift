import CSRT
import Dispatch
import Foundation
import Logging
import Media
import Metrics
import Session
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The SRT listener (`srtPort`): libsrt's socket in live mode, on threads of its own.
///
/// libsrt's calls block, so none of them runs in a Swift task or on an event loop: one thread
/// accepts, and each caller gets a thread: a publisher's reads its MPEG-TS (`SRTPublisher`), a
/// player's waits for the admission and then hands the player to its stream's one sending
/// thread (`SRTPlayer`, `TSFeeds`, `TSSender`), and ends. A caller is vetted in
/// libsrt's listen callback before the handshake completes, so that a refusal is an SRT
/// rejection code the caller sees (`SRT_REJX_*`): a stream id that does not parse (1400), the
/// connection cap or one address's share of it (1402), a player of a stream not live here
/// (1404), a publisher of a node that serves players only, a relay or an edge (1405), and
/// what the admission refuses before admitting anyone (`refusalWithoutWaiting`: a missing
/// key or token, an HMAC token that does not match, 1401; a draining node, 1402; and
/// `refusalWithoutSideEffects`, awaited briefly within `HandshakeWaitBudget`: a key the
/// coordinator refuses, a bad JWT, 1401). The admission then decides as for any publisher
/// or viewer; its refusal closes the connection, logged with the reason (the handshake is
/// over by then: the callback does not wait for a hook, which is told of the attempt, nor
/// ask the cluster whether a stream not yet mirrored here is live elsewhere, nor for an
/// answer past its budget). A denial is remembered
/// (`SRTRefusalMemory`): the same request from the same host within `refusalMemory` is
/// rejected in the handshake with 1401.
public final class SRTListener: Sendable {
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        /// SRT's latency (`SRTO_LATENCY`), the receiver's buffer of time for retransmissions.
        public var latencyMilliseconds = 120
        /// Publishers at once; more are rejected with `SRT_REJX_OVERLOAD`. Separate from the
        /// players' cap, so that viewers can never lock the encoders out.
        public var maxPublishers = 64
        /// Players at once; more are rejected with `SRT_REJX_OVERLOAD`.
        public var maxPlayers = 256
        /// Publishers, and separately players, at once from one address (nil: no limit), so
        /// that one host cannot take every slot (a slot is held from the handshake until the
        /// admission answers, up to `admissionTimeout`); more are rejected with
        /// `SRT_REJX_OVERLOAD`. Loopback is exempt unless `limitLoopback`.
        public var maxCallersPerAddress: Int? = 16
        public var limitLoopback = false
        /// A caller silent this long is dropped (`SRTO_PEERIDLETIMEO`, and the read timeout).
        public var idleTimeout: Duration = .seconds(5)
        /// libsrt's send buffer of each caller (`SRTO_SNDBUF`, set on the listener and inherited):
        /// what a player that acknowledges slowly (with too-late drop turned off) can hold
        /// without its sends blocking into the write timeout. libsrt's default is about 12 MB;
        /// 2 MiB holds over 2 s of a 6 Mbit/s stream, far above the latency window.
        public var sendBufferBytes = 2 << 20
        /// A player whose libsrt send buffer stays full this long is dropped.
        public var writeTimeout: Duration = .seconds(5)
        /// The admission's answer is awaited this long at most.
        public var admissionTimeout: Duration = .seconds(10)
        /// AES encryption (`SRTO_PASSPHRASE`, 10–79 characters): a caller without it, or with
        /// another, is rejected by libsrt in the handshake (`SRT_REJ_BADSECRET`). The key
        /// length (AES-128, 192 or 256) is the caller's (`pbkeylen`).
        public var passphrase: String?
        /// Whether publishers are taken (a node with an ingest). A relay or an edge serves
        /// players only: a publisher is rejected with `SRT_REJX_BAD_MODE` (1405).
        public var takesPublishers = true
        /// How long the admission's refusal of a request is remembered, so that the caller's
        /// next attempt is rejected in the handshake with the refusal's code. Short: an
        /// operator who fixes a key or a hook waits at most this long for the encoder to get in.
        public var refusalMemory: Duration = .seconds(10)
        /// How long a handshake may wait for what the admission can refuse by asking without
        /// consequences (a key the coordinator checks, a JWT's signature); nil: a quarter of
        /// the latency, at most 100 ms; zero: never. libsrt's thread that waits carries every
        /// caller's packets, and a packet read late has less of the latency left for its
        /// retransmission. All waits together take at most `handshakeWaitPerSecond` of the
        /// thread's time, at most `handshakeWaitsPerSecond` of them (`HandshakeWaitBudget`).
        public var handshakeWait: Duration?
        public var handshakeWaitPerSecond: Duration = .milliseconds(100)
        public var handshakeWaitsPerSecond = 100

        /// `handshakeWait`, or its default from the latency.
        var effectiveHandshakeWait: Duration {
            handshakeWait ?? min(.milliseconds(latencyMilliseconds) / 4, .milliseconds(100))
        }

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
    }

    public struct StartFailure: Error, CustomStringConvertible {
        public let description: String
    }

    public let configuration: Configuration
    let admission: any SessionAdmission
    /// Whether a stream is live here, or may be fetched from elsewhere (a relay's bus, an
    /// edge's upstreams), answered at once: libsrt's callback cannot wait.
    let isLive: @Sendable (RequestedRendition) -> Bool
    let feeds: TSFeeds
    /// Refusals of the admission, answered in the next handshake of the same request.
    let refusals: SRTRefusalMemory
    /// What the listen callback may spend waiting for the admission.
    private let handshakeWaits: HandshakeWaitBudget
    let logger: Logger
    private let listening = Mutex<SRTSOCKET?>(nil)
    /// Callers accepted and not yet closed, counted by mode against its cap and one
    /// address's share, as the RTMP and HTTP listeners count their connections.
    private let publishers: ConnectionLimiter
    private let players: ConnectionLimiter
    /// Rejection lines: 20 per 10 s per kind, the rest counted (a flood of handshakes is
    /// not a flood of log lines).
    private let logLimiter = LogRateLimiter(burst: 20, window: .seconds(10))

    static let accepted = Counter(label: "estuary_srt_connections_total", dimensions: [("result", "accepted")])
    static let rejectedStreamID = Counter(label: "estuary_srt_connections_total", dimensions: [("result", "bad_streamid")])
    static let rejectedUnknown = Counter(label: "estuary_srt_connections_total", dimensions: [("result", "unknown_stream")])
    static let rejectedOverload = Counter(label: "estuary_srt_connections_total", dimensions: [("result", "overload")])
    static let rejectedMode = Counter(label: "estuary_srt_connections_total", dimensions: [("result", "bad_mode")])
    static let rejectedAgain = Counter(label: "estuary_srt_connections_total", dimensions: [("result", "refused_again")])
    static let rejectedAddress = Counter(label: "estuary_srt_connections_total", dimensions: [("result", "address_limit")])
    /// Refused by the admission in the handshake (`SessionAdmission.refusalWithoutWaiting`).
    static let rejectedByAdmission = Counter(label: "estuary_srt_connections_total", dimensions: [("result", "refused_in_handshake")])
    /// The handshake's waits for the admission's side-effect-free check: answered within the
    /// wait, not answered (decided after the handshake), or not started (the budget spent).
    static let handshakeWaitAnswered = Counter(label: "estuary_srt_handshake_waits_total", dimensions: [("result", "answered")])
    static let handshakeWaitTimedOut = Counter(label: "estuary_srt_handshake_waits_total", dimensions: [("result", "timed_out")])
    static let handshakeWaitNoBudget = Counter(label: "estuary_srt_handshake_waits_total", dimensions: [("result", "no_budget")])
    /// Callers over the cap that the handshake let through (a burst vetted before any was
    /// accepted), closed at accept.
    static let closedOverCap = Counter(label: "estuary_srt_connections_total", dimensions: [("result", "over_cap")])

    /// The callers of `mode`.
    private func callers(_ mode: SRTStreamID.Mode) -> ConnectionLimiter {
        switch mode {
        case .publish: publishers
        case .play: players
        }
    }

    /// A refusal of a caller in `mode` by its cap: counted, logged (`verb`: where it was
    /// refused) and answered 1402 where the handshake is not over yet.
    private func refuse(_ refusal: ConnectionLimiter.Refusal, _ mode: SRTStreamID.Mode, from remote: String, _ verb: String) {
        let kind = mode == .publish ? "publishers" : "players"
        switch refusal {
        case .nodeFull:
            logRejection("overload", "SRT caller from \(remote) \(verb): \(mode == .publish ? configuration.maxPublishers : configuration.maxPlayers) SRT \(kind) are connected, the most allowed")
        case .addressFull:
            logRejection("address", "SRT caller from \(remote) \(verb): \(configuration.maxCallersPerAddress ?? 0) SRT \(kind) are connected from this address, the most allowed")
        }
    }

    /// Closes an SRT socket off the caller's thread: a kick or an eviction comes from a Swift
    /// task (the admin API, a takeover's admission), where no blocking libsrt call runs.
    static func closeSoon(_ socket: SRTSOCKET) {
        closer.async { srt_close(socket) }
    }

    private static let closer = DispatchQueue(label: "estuary.srt-close")

    public init(
        configuration: Configuration, admission: any SessionAdmission,
        isLive: @escaping @Sendable (RequestedRendition) -> Bool, logger: Logger
    ) {
        self.configuration = configuration
        self.admission = admission
        self.isLive = isLive
        self.feeds = TSFeeds(writeTimeout: configuration.writeTimeout, logger: logger)
        self.refusals = SRTRefusalMemory(duration: configuration.refusalMemory)
        self.handshakeWaits = HandshakeWaitBudget(
            perHandshake: configuration.effectiveHandshakeWait, perSecond: configuration.handshakeWaitPerSecond, countPerSecond: configuration.handshakeWaitsPerSecond
        )
        func limiter(_ cap: Int) -> ConnectionLimiter {
            ConnectionLimiter(limits: ConnectionLimits(
                maxConnections: cap, maxConnectionsPerAddress: configuration.maxCallersPerAddress, limitLoopback: configuration.limitLoopback
            ))
        }
        self.publishers = limiter(configuration.maxPublishers)
        self.players = limiter(configuration.maxPlayers)
        self.logger = logger
    }

    /// Binds and listens; the accept thread runs until `stop`.
    public func start() throws(StartFailure) {
        srt_startup()
        let socket = srt_create_socket()
        guard socket != csrt_invalid_socket() else { throw StartFailure(description: "srt_create_socket: \(Self.lastError())") }
        _ = csrt_set_int(socket, SRTO_LATENCY, Int32(configuration.latencyMilliseconds))
        _ = csrt_set_int(socket, SRTO_PEERIDLETIMEO, Int32(configuration.idleTimeout.milliseconds))
        _ = csrt_set_int(socket, SRTO_SNDBUF, Int32(clamping: configuration.sendBufferBytes))
        if let passphrase = configuration.passphrase {
            guard (10...79).contains(passphrase.utf8.count), csrt_set_string(socket, SRTO_PASSPHRASE, passphrase) == 0 else {
                srt_close(socket)
                throw StartFailure(description: "the SRT passphrase must be 10 to 79 characters")
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(configuration.port).bigEndian)
        let host = configuration.host == "0.0.0.0" || configuration.host.isEmpty ? "0.0.0.0" : configuration.host
        guard inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host, &address.sin_addr) == 1 else {
            srt_close(socket)
            throw StartFailure(description: "SRT listens on IPv4 addresses; \(host) is not one")
        }
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { srt_bind(socket, $0, Int32(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound != csrt_error() else {
            let why = Self.lastError()
            srt_close(socket)
            throw StartFailure(description: why)
        }
        let context = Unmanaged.passUnretained(self).toOpaque()
        srt_listen_callback(socket, { opaque, caller, _, peer, streamID in
            guard let opaque else { return -1 }
            let listener = Unmanaged<SRTListener>.fromOpaque(opaque).takeUnretainedValue()
            return listener.vet(caller, streamID: streamID.map { String(cString: $0) } ?? "", host: peer.map { SRTListener.host(of: $0) } ?? "?")
        }, context)
        guard srt_listen(socket, 64) != csrt_error() else {
            let why = Self.lastError()
            srt_close(socket)
            throw StartFailure(description: why)
        }
        listening.withLock { $0 = socket }
        let thread = Thread { [self] in acceptLoop(socket) }
        thread.name = "srt-accept"
        thread.start()
        logger.info("SRT listening on \(host):\(configuration.port) (latency \(configuration.latencyMilliseconds) ms)")
    }

    /// Closes the listening socket: the accept thread ends, callers already in go on until
    /// their streams end.
    public func stop() {
        if let socket = listening.withLock({ value -> SRTSOCKET? in
            defer { value = nil }
            return value
        }) {
            srt_close(socket)
        }
    }

    /// In libsrt's listen callback, on its thread: 0 lets the handshake complete, -1 rejects
    /// it with the reason set.
    private func vet(_ caller: SRTSOCKET, streamID: String, host: String) -> Int32 {
        let parsed: SRTStreamID
        do {
            parsed = try SRTStreamID(parsing: streamID)
            if parsed.mode == .publish, !configuration.takesPublishers {
                Self.rejectedMode.increment()
                logRejection("bad-mode", "SRT caller rejected: it asks to publish \(parsed.path), and this node serves players only")
                srt_setrejectreason(caller, SRT_REJX_BAD_MODE)
                return -1
            }
            if parsed.mode == .play {
                guard let requested = RequestedRendition(app: parsed.path.app, name: parsed.path.name), isLive(requested) else {
                    Self.rejectedUnknown.increment()
                    logRejection("unknown-stream", "SRT caller rejected: it asks to play \(parsed.path), which is not live here")
                    srt_setrejectreason(caller, SRT_REJX_NOTFOUND)
                    return -1
                }
            }
        } catch {
            Self.rejectedStreamID.increment()
            logRejection("bad-streamid", "SRT caller rejected: \(error)")
            srt_setrejectreason(caller, SRT_REJX_BAD_REQUEST)
            return -1
        }
        if let remembered = refusals.recall(SRTRefusalMemory.key(host: host, parsed)) {
            Self.rejectedAgain.increment()
            logRejection("refused-again", "SRT caller from \(host) rejected (\(remembered.code)): its \(parsed.mode == .publish ? "publish" : "play") of \(parsed.path) was refused moments ago: \(remembered.reason)")
            srt_setrejectreason(caller, remembered.code)
            return -1
        }
        if let refusal = callers(parsed.mode).refusal(of: host) {
            (refusal == .nodeFull ? Self.rejectedOverload : Self.rejectedAddress).increment()
            refuse(refusal, parsed.mode, from: host, "rejected")
            srt_setrejectreason(caller, SRT_REJX_OVERLOAD)
            return -1
        }
        if let refused = earlyRefusal(parsed, host: host) {
            let code = SRTRefusalMemory.code(for: refused.refusal)
            Self.rejectedByAdmission.increment()
            refused.count()
            refusals.remember(SRTRefusalMemory.key(host: host, parsed), refused.refusal)
            logRejection("refused", "SRT caller from \(host) rejected (\(code)): its \(parsed.mode == .publish ? "publish" : "play") of \(parsed.path) is refused: \(refused.reason)")
            srt_setrejectreason(caller, code)
            return -1
        }
        return 0
    }

    /// What the admission refuses before the handshake completes, so that the usual
    /// mistakes get a code on the first attempt: at once (a missing key or token, an HMAC
    /// token that does not match, a draining node), or else after asking without
    /// consequences (a key the coordinator checks, a JWT), awaited within the handshake's
    /// wait budget. A hook's refusal, or an answer that did not come in time, is decided
    /// after the handshake.
    private func earlyRefusal(_ streamID: SRTStreamID, host: String) -> EarlyRefusal? {
        let query = StreamQuery(streamID.query)
        let admission = admission
        switch streamID.mode {
        case .publish:
            let request = PublishRequest(path: streamID.path, query: query, remoteAddress: host, transport: .srt, evict: {})
            if let refused = admission.refusalWithoutWaiting(request) { return refused }
            guard admission.asksWithoutSideEffects(request) else { return nil }
            return waitInHandshake { await admission.refusalWithoutSideEffects(request) }
        case .play:
            guard let requested = RequestedRendition(app: streamID.path.app, name: streamID.path.name) else { return nil }
            let request = PlayRequest(path: requested, query: query, remoteAddress: host, transport: .srt)
            if let refused = admission.refusalWithoutWaiting(request) { return refused }
            guard admission.asksWithoutSideEffects(request) else { return nil }
            return waitInHandshake { await admission.refusalWithoutSideEffects(request) }
        }
    }

    /// `check`'s answer, awaited on libsrt's thread within the handshake's wait budget; nil
    /// when it did not come in time (or there was no budget left), which the admission then
    /// decides after the handshake.
    private func waitInHandshake(_ check: @escaping @Sendable () async -> EarlyRefusal?) -> EarlyRefusal? {
        guard let allowance = handshakeWaits.allowance() else {
            Self.handshakeWaitNoBudget.increment()
            return nil
        }
        let started = ContinuousClock.now
        let answer = waitFromThread(for: allowance, check)
        handshakeWaits.spend(ContinuousClock.now - started)
        guard let answer else {
            Self.handshakeWaitTimedOut.increment()
            return nil
        }
        Self.handshakeWaitAnswered.increment()
        return answer
    }

    func logRejection(_ kind: String, _ line: String) {
        let verdict = logLimiter.check(kind)
        guard verdict.allowed else {
            Counter(label: "estuary_log_lines_held_back_total", dimensions: [("source", "srt")]).increment()
            return
        }
        logger.notice("\(line)\(verdict.suppressed > 0 ? " (linesHeldBack=\(verdict.suppressed))" : "")")
    }

    private func acceptLoop(_ socket: SRTSOCKET) {
        while true {
            var address = sockaddr_storage()
            var length = Int32(MemoryLayout<sockaddr_storage>.size)
            let caller = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { srt_accept(socket, $0, &length) }
            }
            guard caller != csrt_invalid_socket() else {
                // The listening socket was closed (`stop`), or libsrt failed for good.
                if listening.withLock({ $0 }) != nil { logger.error("SRT accept failed: \(Self.lastError())") }
                return
            }
            let remote = Self.describe(address)
            // Vetted in the callback already; read again, as the caller's own.
            guard let streamID = Self.streamID(of: caller) else {
                srt_close(caller)
                continue
            }
            // The callback's check is against the counts when the handshake began: a burst of
            // handshakes can each pass it before any is accepted. Here the count is exact.
            let host = Self.host(ofRemote: remote)
            let counted = callers(streamID.mode)
            if let refusal = counted.admit(address: host) {
                Self.closedOverCap.increment()
                refuse(refusal, streamID.mode, from: remote, "closed at accept")
                srt_close(caller)
                continue
            }
            Self.accepted.increment()
            let done: @Sendable () -> Void = {
                srt_close(caller)
                counted.release(address: host)
            }
            let thread = Thread { [self] in
                switch streamID.mode {
                case .publish:
                    SRTPublisher(socket: caller, remoteAddress: remote, listener: self).run(streamID)
                    done()
                case .play:
                    // An admitted player is handed to its stream's sender, which calls `done`.
                    SRTPlayer(socket: caller, remoteAddress: remote, listener: self).run(streamID, done: done)
                }
            }
            thread.name = "srt-caller"
            thread.start()
        }
    }

    /// The admission's decision for a caller, awaited from the caller's thread for at most
    /// the admission timeout: what it accepted, or nil (refused, or no answer in time;
    /// logged with the reason and counted in `refused`). A refusal is remembered for the
    /// caller's next handshake of the same `streamID`.
    func admit<Accepted: Sendable>(
        _ what: String, from remote: String, streamID: SRTStreamID, refused: Counter,
        endLate: @escaping @Sendable (Accepted) -> Void,
        _ decide: @escaping @Sendable () async -> Result<Accepted, SessionRefusal>
    ) -> Accepted? {
        let late: @Sendable (Result<Accepted, SessionRefusal>) -> Void = { answer in
            if case .success(let accepted) = answer { endLate(accepted) }
        }
        guard let answer = waitFromThread(for: configuration.admissionTimeout, late: late, decide) else {
            refused.increment()
            logRejection("admission-timeout", "SRT \(what) from \(remote): the admission did not answer in time")
            return nil
        }
        switch answer {
        case .success(let accepted):
            return accepted
        case .failure(let refusal):
            refused.increment()
            refusals.remember(SRTRefusalMemory.key(host: Self.host(ofRemote: remote), streamID), refusal)
            logRejection("refused", "SRT \(what) from \(remote) refused: \(refusal.description)")
            return nil
        }
    }

    /// The caller's stream id, parsed; nil if it has none that parses.
    static func streamID(of socket: SRTSOCKET) -> SRTStreamID? {
        var buffer = [CChar](repeating: 0, count: SRTStreamID.maxLength + 1)
        let length = csrt_get_streamid(socket, &buffer, Int32(buffer.count))
        guard length >= 0 else { return nil }
        let text = String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return try? SRTStreamID(parsing: text)
    }

    static func lastError() -> String {
        String(cString: srt_getlasterror_str())
    }

    /// The host of a caller's address as `describe` writes it (`host:port`, IPv4).
    static func host(ofRemote remote: String) -> String {
        String(remote.split(separator: ":", maxSplits: 1).first ?? "?")
    }

    /// The host of the address libsrt's listen callback gives (IPv4: the listener's family).
    static func host(of address: UnsafePointer<sockaddr>) -> String {
        guard address.pointee.sa_family == sa_family_t(AF_INET) else { return "?" }
        return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { inet in
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            var addr = inet.pointee.sin_addr
            inet_ntop(AF_INET, &addr, &text, socklen_t(INET_ADDRSTRLEN))
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    private static func describe(_ address: sockaddr_storage) -> String {
        var copy = address
        guard copy.ss_family == sa_family_t(AF_INET) else { return "?" }
        return withUnsafePointer(to: &copy) { pointer in
            pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { inet in
                var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
                var addr = inet.pointee.sin_addr
                inet_ntop(AF_INET, &addr, &text, socklen_t(INET_ADDRSTRLEN))
                let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                return "\(host):\(UInt16(bigEndian: inet.pointee.sin_port))"
            }
        }
    }
}
