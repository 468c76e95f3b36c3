import NIOConcurrencyHelpers
import NIOCore

/// The in-process bus of `--role all`: the same subjects, wildcards and request/reply as
/// `NATSBus`, without a server.
///
/// `publish` calls every matching handler synchronously on the publisher's thread, after
/// releasing the bus's lock (so a handler may publish or subscribe). Payloads are passed
/// by reference: `ByteBuffer` is copy-on-write, no byte is copied. The lock is held only to
/// walk the subject trie and to count; no actor or Task is on the path.
public final class LocalBus: Bus {
    public typealias Handler = @Sendable (BusMessage) -> Void

    public let maxPayload: Int

    private struct State: Sendable {
        var subscriptions = SubjectTrie<Handler>()
        var nextID: UInt64 = 1
        var statistics = BusStatistics()
        var closed = false
    }

    private let state = NIOLockedValueBox(State())
    private let inbox = RequestInbox()
    /// The wildcard subscription answering every request of this bus; held for its lifetime.
    private let inboxSubscription = NIOLockedValueBox<BusSubscription?>(nil)

    /// - Parameter maxPayload: the limit `publish` enforces. LocalBus could carry any size;
    ///   the default matches nats-server's default `max_payload` (1 MiB) so that code tested
    ///   in one process fragments exactly as it will over NATS.
    public init(maxPayload: Int = 1 << 20) {
        self.maxPayload = maxPayload
        let inbox = inbox
        // The inbox subject is valid by construction; a failure here would be a bug in it.
        let subscription = try? subscribe(subject: inbox.subscriptionSubject) { message in
            inbox.deliver(message)
        }
        inboxSubscription.withLockedValue { $0 = subscription }
    }

    public func publish(subject: String, payload: ByteBuffer) throws(BusError) {
        _ = try deliver(BusMessage(subject: subject, payload: payload))
    }

    public func subscribe(subject: String, handler: @escaping Handler) throws(BusError) -> BusSubscription {
        guard let tokens = Subject.filterTokens(subject) else {
            throw .invalidSubject(subject)
        }
        // `withLockedValue` rethrows untyped errors, hence the Result.
        let id = try state.withLockedValue { state -> Result<UInt64, BusError> in
            guard !state.closed else { return .failure(.closed) }
            let id = state.nextID
            state.nextID += 1
            state.subscriptions.insert(handler, id: id, tokens: tokens)
            return .success(id)
        }.get()
        return BusSubscription(subject: subject) { [weak self] in
            self?.state.withLockedValue { $0.subscriptions.remove(id: id, tokens: tokens) }
        }
    }

    public func request(subject: String, payload: ByteBuffer, timeout: Duration) async throws(BusError) -> ByteBuffer {
        try await inbox.request(subject: subject, timeout: timeout) { (replySubject: String) throws(BusError) in
            let delivered = try deliver(BusMessage(subject: subject, replySubject: replySubject, payload: payload))
            if delivered == 0 {
                inbox.fail(replySubject: replySubject, with: .noResponders(subject: subject))
            }
        }
    }

    public var statistics: BusStatistics {
        state.withLockedValue { $0.statistics }
    }

    /// The number of live subscriptions, including the bus's own request inbox.
    public var subscriptionCount: Int {
        state.withLockedValue { $0.subscriptions.count }
    }

    /// Drops every subscription and fails pending requests; later calls throw `.closed`.
    public func close() {
        state.withLockedValue { state in
            state.closed = true
            state.subscriptions = SubjectTrie()
        }
        inbox.close()
        inboxSubscription.withLockedValue { $0 = nil }
    }

    public func hasSubscribers(to subject: String) -> Bool {
        guard let tokens = Subject.publishTokens(subject) else { return false }
        return state.withLockedValue { !$0.subscriptions.matches(tokens).isEmpty }
    }

    /// Publishes `message` and returns how many handlers received it.
    private func deliver(_ message: BusMessage) throws(BusError) -> Int {
        guard let tokens = Subject.publishTokens(message.subject) else {
            throw .invalidSubject(message.subject)
        }
        let size = message.payload.readableBytes
        let handlers = try state.withLockedValue { state -> Result<[Handler], BusError> in
            guard !state.closed else { return .failure(.closed) }
            guard size <= maxPayload else {
                state.statistics.droppedOutgoing += 1
                return .failure(.payloadTooLarge(size: size, limit: maxPayload))
            }
            let handlers = state.subscriptions.matches(tokens)
            state.statistics.messagesOut += 1
            state.statistics.bytesOut += UInt64(size)
            state.statistics.messagesIn += UInt64(handlers.count)
            state.statistics.bytesIn += UInt64(size * handlers.count)
            return .success(handlers)
        }.get()
        for handler in handlers {
            handler(message)
        }
        return handlers.count
    }
}
