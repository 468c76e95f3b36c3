import Synchronization

/// The part of a session's handle that makes its start and its end known exactly once each,
/// in that order, whoever asks and from whatever thread: the protocol when its client goes,
/// an operator's kick, a takeover, a drain, an admission undoing a late decision.
///
/// A session is admitted, then started (its start told to observers), then ended. An end
/// asked for while the start is still being told waits for it; a session ended before it
/// started (an accepted HTTP request whose body never ran) tells neither.
final class SessionLife: Sendable {
    private enum Phase {
        case admitted
        case starting
        case started
        case ended
    }

    private struct State {
        var phase = Phase.admitted
        /// The first reason given: noted by a kick, a takeover or a drain, or by the end.
        var reason: SessionEndReason?
        /// The end was asked for while the start was being told.
        var endAfterStart = false
    }

    private let state = Mutex(State())

    /// Why the session ends or ended, once someone said.
    var reason: SessionEndReason? { state.withLock { $0.reason } }

    /// Whether the session was ended (its end may still be on its way to the observers, after
    /// its start).
    var hasEnded: Bool { state.withLock { $0.phase == .ended || $0.endAfterStart } }

    /// Notes why the session is about to end (before the protocol closes it), unless a
    /// reason was given already.
    func note(_ reason: SessionEndReason) {
        state.withLock { state in
            if state.reason == nil { state.reason = reason }
        }
    }

    /// Tells `started` to `sink` once, then `ended` if the end was asked for meanwhile.
    func start(_ sink: SessionEventSink, started: SessionEvent, ended: SessionEvent) async {
        guard beginStart() else { return }
        await sink(started)
        if finishStart() {
            await sink(ended)
        }
    }

    /// `start` from where nothing can wait: the session counts as starting at once, and the
    /// events are told in the background.
    func begin(_ sink: @escaping SessionEventSink, started: SessionEvent, ended: SessionEvent) {
        guard beginStart() else { return }
        Task {
            await sink(started)
            if self.finishStart() {
                await sink(ended)
            }
        }
    }

    /// Ends the session for `reason` and tells `ended` in the background, once.
    func end(_ reason: SessionEndReason, _ sink: @escaping SessionEventSink, ended: SessionEvent) {
        guard end(reason) else { return }
        Task { await sink(ended) }
    }

    /// True when the caller is to tell the start: the session was admitted and not started.
    private func beginStart() -> Bool {
        state.withLock { state in
            guard state.phase == .admitted else { return false }
            state.phase = .starting
            return true
        }
    }

    /// The start was told. True when the caller is now to tell the end (asked for meanwhile).
    private func finishStart() -> Bool {
        state.withLock { state in
            guard state.phase == .starting else { return false }
            if state.endAfterStart {
                state.phase = .ended
                return true
            }
            state.phase = .started
            return false
        }
    }

    /// Ends the session for `reason` (unless a reason was noted before). True when the
    /// caller is to tell the end now: the session had started and had not ended.
    private func end(_ reason: SessionEndReason) -> Bool {
        state.withLock { state in
            if state.reason == nil { state.reason = reason }
            switch state.phase {
            case .admitted:
                state.phase = .ended
                return false
            case .starting:
                state.endAfterStart = true
                return false
            case .started:
                state.phase = .ended
                return true
            case .ended:
                return false
            }
        }
    }
}
