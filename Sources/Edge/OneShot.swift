import NIOConcurrencyHelpers

/// A value that is set once (the first `set` wins) and awaited by anyone, before or after:
/// how the edge's and the forwards' async code waits for an RTMP connection's answer or end,
/// which arrive as events on the connection's event loop.
final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var waiters: [CheckedContinuation<Value, Never>] = []
    }
    private let state = NIOLockedValueBox(State())

    /// The value, once set.
    var value: Value? { state.withLockedValue { $0.value } }

    /// Sets the value and wakes every waiter; does nothing once set.
    func set(_ value: Value) {
        let waiters = state.withLockedValue { state -> [CheckedContinuation<Value, Never>] in
            guard state.value == nil else { return [] }
            state.value = value
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: value) }
    }

    /// The value, waiting for it if it is not set yet.
    func wait() async -> Value {
        await withCheckedContinuation { continuation in
            let known = state.withLockedValue { state -> Value? in
                if let value = state.value { return value }
                state.waiters.append(continuation)
                return nil
            }
            if let known { continuation.resume(returning: known) }
        }
    }
}
