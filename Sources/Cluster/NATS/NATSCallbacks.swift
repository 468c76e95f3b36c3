import CNats
import Logging
import NIOCore

/// What a subscription's cnats callback needs. Passed to cnats as an `Unmanaged` pointer
/// retained once at subscribe time and released by `natsSubscriptionCompleted`, which
/// cnats calls after the subscription is closed and its last handler call has returned.
final class NATSSubscriptionContext: Sendable {
    let handler: @Sendable (BusMessage) -> Void
    /// The subject string itself when the subscription has no wildcard: every message
    /// then carries exactly it, and reusing it saves a String per message.
    let fixedSubject: String?
    /// Set for the bus's reply-inbox subscription, which also needs cnats's
    /// no-responders marker.
    let inbox: RequestInbox?
    private let allocator = ByteBufferAllocator()

    init(subject: String, inbox: RequestInbox?, handler: @escaping @Sendable (BusMessage) -> Void) {
        self.handler = handler
        self.fixedSubject = subject.contains(where: { $0 == "*" || $0 == ">" }) ? nil : subject
        self.inbox = inbox
    }

    /// Copies the message out of cnats's memory (freed when the callback returns) and
    /// calls the handler.
    func deliver(_ message: OpaquePointer) {
        let length = Int(natsMsg_GetDataLength(message))
        var payload = allocator.buffer(capacity: length)
        if length > 0, let data = natsMsg_GetData(message) {
            payload.writeBytes(UnsafeRawBufferPointer(start: UnsafeRawPointer(data), count: length))
        }
        let subject = fixedSubject ?? natsMsg_GetSubject(message).map { String(cString: $0) } ?? ""
        let replySubject = natsMsg_GetReply(message).map { String(cString: $0) }
        let busMessage = BusMessage(subject: subject, replySubject: replySubject, payload: payload)
        if let inbox {
            inbox.deliver(busMessage, noResponders: natsMsg_IsNoResponders(message))
        } else {
            handler(busMessage)
        }
    }
}

/// The connection-event closure and logger, passed to cnats as an `Unmanaged` pointer
/// retained once at connect time. cnats reports events on its one callback thread in
/// order, `closed` last, so the closed callback releases it.
final class NATSEventContext: Sendable {
    let onEvent: @Sendable (NATSBusEvent) -> Void
    let logger: Logger

    init(logger: Logger, onEvent: @escaping @Sendable (NATSBusEvent) -> Void) {
        self.logger = logger
        self.onEvent = onEvent
    }

    func report(_ event: NATSBusEvent) {
        switch event {
        case .disconnected:
            logger.warning("NATS connection lost; reconnecting, publishes are buffered")
        case .reconnected:
            logger.info("NATS connection restored")
        case .connected:
            logger.info("NATS connected")
        case .closed:
            logger.info("NATS connection closed")
        case .error(let error):
            logger.error("NATS asynchronous error", metadata: ["error": "\(error)"])
        }
        onEvent(event)
    }
}

// cnats callbacks: C function pointers, so they capture nothing and find their Swift
// context through the closure pointer.

let natsMessageReceived: natsMsgHandler = { _, _, message, closure in
    guard let message else { return }
    defer { natsMsg_Destroy(message) }
    guard let closure else { return }
    Unmanaged<NATSSubscriptionContext>.fromOpaque(closure).takeUnretainedValue().deliver(message)
}

let natsSubscriptionCompleted: natsOnCompleteCB = { closure in
    guard let closure else { return }
    Unmanaged<NATSSubscriptionContext>.fromOpaque(closure).release()
}

let natsDisconnected: natsConnectionHandler = { _, closure in
    guard let closure else { return }
    Unmanaged<NATSEventContext>.fromOpaque(closure).takeUnretainedValue().report(.disconnected)
}

let natsReconnected: natsConnectionHandler = { _, closure in
    guard let closure else { return }
    Unmanaged<NATSEventContext>.fromOpaque(closure).takeUnretainedValue().report(.reconnected)
}

let natsConnected: natsConnectionHandler = { _, closure in
    guard let closure else { return }
    Unmanaged<NATSEventContext>.fromOpaque(closure).takeUnretainedValue().report(.connected)
}

let natsClosed: natsConnectionHandler = { _, closure in
    guard let closure else { return }
    // The last event of a connection: release the reference taken at connect time.
    Unmanaged<NATSEventContext>.fromOpaque(closure).takeRetainedValue().report(.closed)
}

let natsAsyncError: natsErrHandler = { _, _, status, closure in
    guard let closure else { return }
    Unmanaged<NATSEventContext>.fromOpaque(closure).takeUnretainedValue().report(.error(NATSError("asynchronous", status)))
}
