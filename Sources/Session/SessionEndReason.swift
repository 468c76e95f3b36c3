/// Why a session ended: logged with its end, counted, and told to observers (hooks next).
/// The first reason given wins: an operator's kick, a takeover or a drain is noted when it
/// is asked for, before the protocol closes the connection and ends the session with what it
/// saw (`left`, usually), so the log says what really ended it.
public enum SessionEndReason: Sendable, Hashable, CustomStringConvertible {
    /// The client ended it: it unpublished, stopped playing or closed the connection.
    case left
    /// An operator, through the admin API, with their reason.
    case kicked(String)
    /// A newer publisher of the same stream took it over (publishers only).
    case takenOver
    /// The node let the publisher go without a newer one: its stream key was revoked.
    case evicted
    /// The node drains: its clients are sent elsewhere.
    case draining
    /// The node stops.
    case shutdown
    /// The stream the viewer watched ended.
    case streamEnded
    /// A timeout: an idle publisher, a viewer whose socket stopped taking data, an HLS
    /// player that stopped asking.
    case timedOut(String)
    /// A protocol error or a bound the client passed.
    case failed(String)
    /// Admitted after the client had been refused for a decision that came too late
    /// (`TimeLimitedAdmission`): undone at once.
    case lateDecision

    public var description: String {
        switch self {
        case .left: "left"
        case .kicked(let reason): "kicked: \(reason)"
        case .takenOver: "taken over by a newer publisher"
        case .evicted: "evicted: its stream key was revoked"
        case .draining: "the node is draining"
        case .shutdown: "the node is shutting down"
        case .streamEnded: "the stream ended"
        case .timedOut(let what): "timed out: \(what)"
        case .failed(let why): "failed: \(why)"
        case .lateDecision: "admitted after the client was refused for a late decision"
        }
    }

    /// A short label for metrics.
    public var label: String {
        switch self {
        case .left: "left"
        case .kicked: "kicked"
        case .takenOver: "taken_over"
        case .evicted: "evicted"
        case .draining: "draining"
        case .shutdown: "shutdown"
        case .streamEnded: "stream_ended"
        case .timedOut: "timed_out"
        case .failed: "failed"
        case .lateDecision: "late_decision"
        }
    }
}
