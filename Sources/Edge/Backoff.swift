/// The one retry schedule of the node's outgoing connections (static pulls, forwards, an
/// edge's upstreams): `first`, doubling with each failure in a row up to `max`, each delay
/// drawn from its upper half ("equal jitter"), so that the retries of many streams after one
/// outage spread out instead of arriving together.
public struct Backoff: Sendable {
    public let first: Duration
    public let max: Duration
    /// Failures in a row since the last reset.
    public private(set) var failures = 0

    public init(first: Duration, max: Duration) {
        self.first = first
        self.max = Swift.max(first, max)
    }

    /// The delay before the next attempt, counting one more failure.
    public mutating func next() -> Duration {
        var random = SystemRandomNumberGenerator()
        return next(using: &random)
    }

    public mutating func next(using random: inout some RandomNumberGenerator) -> Duration {
        let delay = Self.delay(first: first, max: max, failures: failures, using: &random)
        failures += 1
        return delay
    }

    /// A success (or a connection that had delivered): the next failure waits `first` again.
    public mutating func reset() {
        failures = 0
    }

    /// The delay after `failures` failures in a row: within [ceiling / 2, ceiling], where the
    /// ceiling is `first` × 2^failures, at most `max`.
    public static func delay(first: Duration, max: Duration, failures: Int, using random: inout some RandomNumberGenerator) -> Duration {
        let ceiling = Self.ceiling(first: first, max: max, failures: failures)
        let nanoseconds = Self.nanoseconds(ceiling)
        guard nanoseconds > 1 else { return ceiling }
        return .nanoseconds(nanoseconds / 2 + Int64.random(in: 0...(nanoseconds - nanoseconds / 2), using: &random))
    }

    public static func delay(first: Duration, max: Duration, failures: Int) -> Duration {
        var random = SystemRandomNumberGenerator()
        return delay(first: first, max: max, failures: failures, using: &random)
    }

    /// `first` × 2^failures, at most `max` (the doubling stops at 2^30).
    public static func ceiling(first: Duration, max: Duration, failures: Int) -> Duration {
        let doubled = Self.nanoseconds(first).multipliedReportingOverflow(by: Int64(1) << Int64(Swift.min(Swift.max(failures, 0), 30)))
        let limit = Self.nanoseconds(max)
        return .nanoseconds(doubled.overflow ? limit : Swift.min(doubled.partialValue, limit))
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}
