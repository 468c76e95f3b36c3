import Foundation
import Synchronization

/// A wall clock the test moves by hand, injected as `CoordinatorState`'s `now`.
final class ManualClock: Sendable {
    private let current: Mutex<Date>

    /// Whole seconds: the store keeps dates to the millisecond.
    init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        current = Mutex(start)
    }

    var now: Date { current.withLock { $0 } }

    func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }

    var function: @Sendable () -> Date { { self.now } }
}
