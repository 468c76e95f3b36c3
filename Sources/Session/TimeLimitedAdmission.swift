import Media
import Synchronization

/// An admission whose decisions come within `timeout`, or are refusals: a policy that never
/// answers (a hook whose server hangs, a coordinator that is asked and does not reply) must
/// not hold a client's connection for ever. The client is told "no decision within 5 s"
/// as an unavailable refusal (RTMP `…Failed`/`Denied`, HTTP 503).
///
/// A decision that comes after its refusal is undone: an accepted publisher's session is
/// ended (`lateDecision`), which detaches it from its hub, so the stream is free again. (An
/// accepted play holds nothing until the protocol starts serving it.)
public struct TimeLimitedAdmission: SessionAdmission {
    public let inner: any SessionAdmission
    /// A reload may change it (`setTimeout`) for the decisions asked afterwards.
    public var timeout: Duration { timeoutSetting.value }
    private let timeoutSetting: Reloadable<Duration>
    /// Told of each decision that timed out (`publish` or `play`, and the request's path), for
    /// a log line and a metric.
    public let onTimeout: @Sendable (_ kind: SessionKind, _ path: String) -> Void

    public init(_ inner: any SessionAdmission, timeout: Duration, onTimeout: @escaping @Sendable (_ kind: SessionKind, _ path: String) -> Void = { _, _ in }) {
        self.inner = inner
        timeoutSetting = Reloadable(timeout)
        self.onTimeout = onTimeout
    }

    public func setTimeout(_ timeout: Duration) {
        timeoutSetting.set(timeout)
    }

    static func refusal(_ timeout: Duration) -> SessionRefusal {
        .unavailable("no admission decision within \(timeout.components.seconds) s; try again later")
    }

    public func publish(_ request: PublishRequest) async -> PublishAnswer {
        let inner = inner
        return await Self.decide(within: timeout, refusal: .refused(Self.refusal(timeout)), onTimeout: { onTimeout(.publish, "\(request.path)") }) {
            await inner.publish(request)
        } undo: { late in
            // Too late: the client was refused and is gone. Give the stream back.
            guard case .accepted(let session) = late else { return }
            session.end(.lateDecision)
        }
    }

    /// Answered without waiting: not timed.
    public func refusalWithoutWaiting(_ request: PublishRequest) -> EarlyRefusal? {
        inner.refusalWithoutWaiting(request)
    }

    public func refusalWithoutWaiting(_ request: PlayRequest) -> EarlyRefusal? {
        inner.refusalWithoutWaiting(request)
    }

    /// Awaited by its caller for a bound of its own (SRT's handshake): not timed here.
    public func refusalWithoutSideEffects(_ request: PublishRequest) async -> EarlyRefusal? {
        await inner.refusalWithoutSideEffects(request)
    }

    public func refusalWithoutSideEffects(_ request: PlayRequest) async -> EarlyRefusal? {
        await inner.refusalWithoutSideEffects(request)
    }

    public func asksWithoutSideEffects(_ request: PublishRequest) -> Bool { inner.asksWithoutSideEffects(request) }
    public func asksWithoutSideEffects(_ request: PlayRequest) -> Bool { inner.asksWithoutSideEffects(request) }

    /// Local and quick (no policy is asked): not timed.
    public func publishRendition(_ request: RenditionRequest) async -> PublishAnswer {
        await inner.publishRendition(request)
    }

    /// Local and quick (no policy is asked: its publisher was admitted): not timed.
    public func publishTrack(of publisher: PublishSession, rendition: String) async -> PublishAnswer {
        await inner.publishTrack(of: publisher, rendition: rendition)
    }

    public func play(_ request: PlayRequest) async -> PlayAnswer {
        let inner = inner
        return await Self.decide(within: timeout, refusal: .refused(Self.refusal(timeout)), onTimeout: { onTimeout(.play, "\(request.path)") }) {
            await inner.play(request)
        } undo: { late in
            guard case .accepted(let session) = late else { return }
            session.end(.lateDecision)
        }
    }

    /// The first of `decision` and the timeout. The decision runs in a task of its own, so
    /// the caller returns at the timeout even if it never ends; the timer is cancelled as
    /// soon as the decision comes.
    static func decide<Decision: Sendable>(
        within timeout: Duration,
        refusal: Decision,
        onTimeout: @escaping @Sendable () -> Void,
        _ decision: @escaping @Sendable () async -> Decision,
        undo: @escaping @Sendable (Decision) async -> Void
    ) async -> Decision {
        let answer = FirstAnswer<Decision>()
        return await withCheckedContinuation { continuation in
            answer.set(continuation)
            let timer = Task {
                try? await Task.sleep(for: timeout)
                guard !Task.isCancelled, answer.resume(with: refusal) else { return }
                onTimeout()
            }
            Task {
                let decided = await decision()
                timer.cancel()
                if !answer.resume(with: decided) {
                    await undo(decided)
                }
            }
        }
    }

    /// Resumes a continuation once, with whichever answer comes first.
    final class FirstAnswer<Value: Sendable>: Sendable {
        private let state = Mutex<(continuation: CheckedContinuation<Value, Never>?, answered: Bool)>((nil, false))

        func set(_ continuation: CheckedContinuation<Value, Never>) {
            state.withLock { $0.continuation = continuation }
        }

        /// False when an answer came first.
        func resume(with value: Value) -> Bool {
            let continuation = state.withLock { state -> CheckedContinuation<Value, Never>? in
                guard !state.answered else { return nil }
                state.answered = true
                defer { state.continuation = nil }
                return state.continuation
            }
            guard let continuation else { return false }
            continuation.resume(returning: value)
            return true
        }
    }
}
