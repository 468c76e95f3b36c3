import CNats

/// A failed libnats call: the operation and cnats's status code. The text is rendered
/// only when the error is printed.
public struct NATSError: Error, Equatable, CustomStringConvertible {
    /// The cnats function (or step) that failed, e.g. `natsConnection_Connect`.
    public var operation: String
    /// The `natsStatus` value.
    public var status: UInt32
    /// cnats's own text for the failure, when it has one (a failed connect: the server's
    /// `-ERR`, or which credentials file could not be read and why).
    public var detail: String?

    init(_ operation: String, _ status: natsStatus, detail: String? = nil) {
        self.operation = operation
        self.status = status.rawValue
        self.detail = detail
    }

    public var description: String {
        let text = natsStatus_GetText(natsStatus(rawValue: status)).map { String(cString: $0) } ?? "status \(status)"
        return "\(operation): \(text)" + (detail.map { " (\($0))" } ?? "")
    }

    /// The reconnect buffer is full: NATS has been unreachable for longer than it covers.
    public var isInsufficientBuffer: Bool { status == NATS_INSUFFICIENT_BUFFER.rawValue }
    /// The server refused the credentials (user/password, token, credentials file).
    public var isAuthorizationFailure: Bool { status == NATS_CONNECTION_AUTH_FAILED.rawValue || status == NATS_NOT_PERMITTED.rawValue }
    /// The connection was closed.
    public var isConnectionClosed: Bool { status == NATS_CONNECTION_CLOSED.rawValue }
}

extension natsStatus {
    /// Throws `BusError.nats` unless the status is `NATS_OK`.
    func check(_ operation: String) throws(BusError) {
        guard self == NATS_OK else {
            throw .nats(NATSError(operation, self))
        }
    }
}
