import Dispatch
import Media
import Synchronization

/// Awaits `operation` from a thread outside the task pool (a libsrt caller's), for at most
/// `timeout`: nil when it did not answer in time. The task pool is never blocked; only the
/// caller's own thread waits. An answer that comes after the caller gave up goes to `late`
/// (an accepted session must still be ended).
func waitFromThread<T: Sendable>(
    for timeout: Duration, late: @escaping @Sendable (T) -> Void = { _ in }, _ operation: @escaping @Sendable () async -> T
) -> T? {
    let state = Mutex<ThreadWaitState<T>>(.waiting)
    let done = DispatchSemaphore(value: 0)
    Task {
        let value = await operation()
        let abandoned = state.withLock { state -> Bool in
            if case .abandoned = state { return true }
            state = .answered(value)
            return false
        }
        if abandoned { late(value) } else { done.signal() }
    }
    _ = done.wait(timeout: .now() + .milliseconds(Int(timeout.milliseconds)))
    return state.withLock { state -> T? in
        if case .answered(let value) = state { return value }
        state = .abandoned
        return nil
    }
}

/// Where a `waitFromThread` stands: still waiting, answered in time, or given up on.
private enum ThreadWaitState<T: Sendable>: Sendable {
    case waiting
    case answered(T)
    case abandoned
}
