import Dispatch
import Media
import Synchronization

/// Awaits `operation` from a thread outside the task pool (a libsrt caller's), for at most
/// `timeout`: nil when it did not answer in time. The task pool is never blocked; only the
/// caller's own thread waits.
func waitFromThread<T: Sendable>(for timeout: Duration, _ operation: @escaping @Sendable () async -> T) -> T? {
    let answer = Mutex<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let value = await operation()
        answer.withLock { $0 = value }
        done.signal()
    }
    guard done.wait(timeout: .now() + .milliseconds(Int(timeout.milliseconds))) == .success else { return nil }
    return answer.withLock { $0 }
}
