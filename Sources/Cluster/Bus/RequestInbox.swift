import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Pending requests of one bus, answered through one wildcard inbox subscription
/// (`_INBOX.<random>.*`), as nats.go does: a request costs a map entry and a timer, not a
/// subscription or a blocked thread. Replies carry the request's token as the last
/// subject token.
///
/// Timeouts are event-loop timers, not sleeping Tasks: Swift's cooperative pool is two
/// threads here, and a timeout must fire on time even while that pool is busy.
final class RequestInbox: Sendable {
    /// `_INBOX.<random>.`: the reply subject of a request is this plus its token.
    let prefix: String
    /// The subject to subscribe to for replies.
    var subscriptionSubject: String { prefix + ">" }

    private struct Pending: Sendable {
        var subject: String
        var continuation: CheckedContinuation<Result<ByteBuffer, BusError>, Never>
        var timer: Scheduled<Void>?
    }

    private struct State: Sendable {
        var nextToken: UInt64 = 1
        var pending: [UInt64: Pending] = [:]
        var closed = false
    }

    private let state = NIOLockedValueBox(State())
    /// Where the timeouts run.
    private let timers: any EventLoop

    init(timers: any EventLoop = MultiThreadedEventLoopGroup.singleton.next()) {
        self.timers = timers
        // 128 random bits keep inboxes of different processes apart on a shared server.
        var generator = SystemRandomNumberGenerator()
        let high = String(generator.next() as UInt64, radix: 36)
        let low = String(generator.next() as UInt64, radix: 36)
        prefix = "_INBOX.\(high)\(low)."
    }

    var pendingCount: Int { state.withLockedValue { $0.pending.count } }

    /// Registers a request, calls `send` with its reply subject, and waits for the reply,
    /// the timeout, or cancellation of the calling task.
    func request(
        subject: String,
        timeout: Duration,
        send: (String) throws(BusError) -> Void
    ) async throws(BusError) -> ByteBuffer {
        let token = state.withLockedValue { state in
            defer { state.nextToken &+= 1 }
            return state.nextToken
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<ByteBuffer, BusError>, Never>) in
                let registered = state.withLockedValue { state -> Bool in
                    guard !state.closed else { return false }
                    state.pending[token] = Pending(subject: subject, continuation: continuation)
                    return true
                }
                guard registered else {
                    continuation.resume(returning: .failure(.closed))
                    return
                }
                // Registered before sending: on LocalBus the reply can arrive inside `send`.
                do throws(BusError) {
                    try send(prefix + String(token))
                } catch {
                    complete(token: token, with: .failure(error))
                    return
                }
                // A cancellation that ran before registration found nothing to complete.
                if Task.isCancelled {
                    complete(token: token, with: .failure(.cancelled))
                    return
                }
                let (seconds, attoseconds) = timeout.components
                let delay = TimeAmount.seconds(seconds) + .nanoseconds(attoseconds / 1_000_000_000)
                let timer = timers.scheduleTask(in: delay) { [weak self] in
                    guard let self else { return }
                    self.complete(token: token, with: .failure(.timeout(subject: subject)))
                }
                let stillPending = state.withLockedValue { state -> Bool in
                    guard state.pending[token] != nil else { return false }
                    state.pending[token]?.timer = timer
                    return true
                }
                if !stillPending {
                    timer.cancel()
                }
            }
        } onCancel: {
            complete(token: token, with: .failure(.cancelled))
        }
        return try result.get()
    }

    /// Routes a message that arrived on the inbox subscription to its request.
    /// `noResponders` is set for the server's status-503 message.
    func deliver(_ message: BusMessage, noResponders: Bool = false) {
        guard let token = token(of: message.subject) else {
            return
        }
        if noResponders {
            let subject = state.withLockedValue { $0.pending[token]?.subject } ?? ""
            complete(token: token, with: .failure(.noResponders(subject: subject)))
        } else {
            complete(token: token, with: .success(message.payload))
        }
    }

    /// Fails a request, e.g. with `.noResponders` when LocalBus finds no subscriber.
    func fail(replySubject: String, with error: BusError) {
        guard let token = token(of: replySubject) else {
            return
        }
        complete(token: token, with: .failure(error))
    }

    /// Fails every pending request with `.closed` and refuses new ones.
    func close() {
        let pending = state.withLockedValue { state in
            state.closed = true
            defer { state.pending.removeAll() }
            return Array(state.pending.values)
        }
        for entry in pending {
            entry.timer?.cancel()
            entry.continuation.resume(returning: .failure(.closed))
        }
    }

    private func token(of replySubject: String) -> UInt64? {
        guard replySubject.hasPrefix(prefix) else { return nil }
        return UInt64(Substring(replySubject.utf8.dropFirst(prefix.utf8.count)))
    }

    private func complete(token: UInt64, with result: Result<ByteBuffer, BusError>) {
        guard let entry = state.withLockedValue({ $0.pending.removeValue(forKey: token) }) else { return }
        entry.timer?.cancel()
        entry.continuation.resume(returning: result)
    }
}
