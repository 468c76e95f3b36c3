import NIOConcurrencyHelpers
import NIOCore

/// Bounds on open connections of one listener.
public struct ConnectionLimits: Sendable, Equatable {
    /// The most connections open at once (nil: no limit but the descriptor limit).
    public var maxConnections: Int?
    /// The most connections open at once from one client address (nil: no limit).
    public var maxConnectionsPerAddress: Int?
    /// Whether the per-address limit applies to loopback clients too. By default it does not:
    /// a reverse proxy or a restreamer on the same host brings every viewer from 127.0.0.1.
    public var limitLoopback: Bool

    /// 10,000 connections is what one node is sized for (docs/benchmarks.md); 1,000 per
    /// address leaves room for a NAT gateway in front of many viewers, while one host can no
    /// longer take every descriptor.
    public init(maxConnections: Int? = 10_000, maxConnectionsPerAddress: Int? = 1_000, limitLoopback: Bool = false) {
        self.maxConnections = maxConnections
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.limitLoopback = limitLoopback
    }
}

/// Counts a listener's open connections, in total and per client address, and refuses those
/// over its ``ConnectionLimits`` at accept. Protocol-neutral: the RTMP and HTTP listeners each
/// hold one.
///
/// The per-address table holds only addresses with open connections, so it is bounded by the
/// connection limit.
public final class ConnectionLimiter: Sendable {
    /// Why a connection was refused; the metric label.
    public enum Refusal: String, Sendable {
        case nodeFull = "node_connection_limit"
        case addressFull = "address_connection_limit"
    }

    /// The limits new connections are held to (a reload may change them; connections already
    /// counted stay).
    public var limits: ConnectionLimits { state.withLockedValue { $0.limits } }
    private struct State {
        var limits: ConnectionLimits
        var total = 0
        var perAddress: [String: Int] = [:]
        var lastLog: NIODeadline = .uptimeNanoseconds(0)
        var refusedSinceLog = 0
    }
    private let state: NIOLockedValueBox<State>

    public init(limits: ConnectionLimits) {
        state = NIOLockedValueBox(State(limits: limits))
    }

    public func setLimits(_ limits: ConnectionLimits) {
        state.withLockedValue { $0.limits = limits }
    }

    /// Open connections now.
    public var openConnections: Int { self.state.withLockedValue { $0.total } }

    /// Counts a new connection from `address`, or says why it is refused (and counts nothing).
    /// Every admitted connection must be given back with ``release(address:)`` when it closes.
    public func admit(address: String) -> Refusal? {
        self.state.withLockedValue { state in
            if let refusal = Self.refusal(of: address, in: state) {
                state.refusedSinceLog += 1
                return refusal
            }
            state.total += 1
            state.perAddress[address, default: 0] += 1
            return nil
        }
    }

    /// Why a connection from `address` would be refused now, counting nothing: a check ahead
    /// of `admit` where the connection is not there yet (SRT's handshake).
    public func refusal(of address: String) -> Refusal? {
        self.state.withLockedValue { Self.refusal(of: address, in: $0) }
    }

    private static func refusal(of address: String, in state: State) -> Refusal? {
        if let limit = state.limits.maxConnections, state.total >= limit { return .nodeFull }
        if let limit = state.limits.maxConnectionsPerAddress, state.perAddress[address, default: 0] >= limit,
           state.limits.limitLoopback || !isLoopback(address) {
            return .addressFull
        }
        return nil
    }

    /// 127.0.0.0/8, ::1 and IPv4-mapped loopback.
    public static func isLoopback(_ address: String) -> Bool {
        address.hasPrefix("127.") || address == "::1" || address.hasPrefix("::ffff:127.")
    }

    /// Gives back a connection counted by ``admit(address:)``.
    public func release(address: String) {
        self.state.withLockedValue { state in
            state.total -= 1
            let remaining = state.perAddress[address, default: 1] - 1
            state.perAddress[address] = remaining > 0 ? remaining : nil
        }
    }

    /// Whether a refusal should be logged now, and how many were refused since the last line:
    /// at most one line a second, so a flood of connections does not become a flood of logs.
    public func refusalToLog(now: NIODeadline = .now()) -> Int? {
        self.state.withLockedValue { state in
            guard state.refusedSinceLog > 0, now - state.lastLog >= .seconds(1) else { return nil }
            state.lastLog = now
            defer { state.refusedSinceLog = 0 }
            return state.refusedSinceLog
        }
    }
}
