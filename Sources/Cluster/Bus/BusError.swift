/// Errors of bus operations.
public enum BusError: Error, Equatable, CustomStringConvertible {
    /// Not a valid subject: empty token, whitespace, or a wildcard where none is allowed.
    case invalidSubject(String)
    /// The payload is larger than the bus's `maxPayload`.
    case payloadTooLarge(size: Int, limit: Int)
    /// No reply within the request's timeout.
    case timeout(subject: String)
    /// The request's subject has no subscriber.
    case noResponders(subject: String)
    /// The requesting task was cancelled.
    case cancelled
    /// The bus was closed.
    case closed
    /// `respond` was called for a message that carries no reply subject.
    case noReplySubject(String)
    /// A libnats call failed.
    case nats(NATSError)

    public var description: String {
        switch self {
        case .invalidSubject(let subject): "invalid bus subject '\(subject)'"
        case .payloadTooLarge(let size, let limit): "bus payload of \(size) bytes exceeds the limit of \(limit)"
        case .timeout(let subject): "no reply on '\(subject)' before the timeout"
        case .noResponders(let subject): "no responders on '\(subject)'"
        case .cancelled: "request cancelled"
        case .closed: "bus closed"
        case .noReplySubject(let subject): "message on '\(subject)' has no reply subject"
        case .nats(let error): error.description
        }
    }
}
