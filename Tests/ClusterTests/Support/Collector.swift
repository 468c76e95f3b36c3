import NIOConcurrencyHelpers

/// Values collected from bus handlers (which run on other threads), with bounded waits.
final class Collector<Value: Sendable>: Sendable {
    private let box = NIOLockedValueBox<[Value]>([])

    func append(_ value: Value) {
        box.withLockedValue { $0.append(value) }
    }

    var values: [Value] { box.withLockedValue { $0 } }

    /// Waits until at least `count` values arrived or `timeout` passed; returns the values.
    @discardableResult
    func wait(for count: Int, timeout: Duration = .seconds(5)) async -> [Value] {
        let deadline = ContinuousClock.now + timeout
        while box.withLockedValue({ $0.count }) < count, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        return values
    }
}
