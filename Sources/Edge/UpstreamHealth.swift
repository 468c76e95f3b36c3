import NIOConcurrencyHelpers
import NIOCore

/// Which upstreams to try, and when: an upstream that failed (refused, reset, stalled) is
/// skipped for a backoff that doubles with each failure in a row (0.5 s up to 10 s, with
/// jitter: `Backoff`) and
/// is forgotten on its first success. Shared by every pull of the edge, so one stream's
/// failover spares the others a dead origin's timeout.
public final class UpstreamHealth: Sendable {
    public let upstreams: [Upstream]
    private struct Entry {
        var failures = 0
        var retryAt = NIODeadline.uptimeNanoseconds(0)
    }
    private let entries: NIOLockedValueBox<[Entry]>
    static let firstBackoff = Duration.milliseconds(500)
    static let maxBackoff = Duration.seconds(10)

    public init(upstreams: [Upstream]) {
        self.upstreams = upstreams
        self.entries = NIOLockedValueBox(Array(repeating: Entry(), count: upstreams.count))
    }

    /// The upstreams in the order to try them now: those not backing off, in configured
    /// order, starting after `after` (the one that just failed) so a pull moves on rather
    /// than back; then those backing off, soonest retry first.
    public func order(now: NIODeadline = .now(), after: Int? = nil) -> [Int] {
        let entries = entries.withLockedValue { $0 }
        let count = upstreams.count
        let start = after.map { ($0 + 1) % max(count, 1) } ?? 0
        let rotation = (0..<count).map { (start + $0) % count }
        let ready = rotation.filter { entries[$0].retryAt <= now }
        let waiting = rotation.filter { entries[$0].retryAt > now }.sorted { entries[$0].retryAt < entries[$1].retryAt }
        return ready + waiting
    }

    /// When `index` may be tried again (now or later).
    public func retryAt(_ index: Int) -> NIODeadline {
        entries.withLockedValue { $0[index].retryAt }
    }

    public func failed(_ index: Int, now: NIODeadline = .now()) {
        entries.withLockedValue { entries in
            let backoff = Backoff.delay(first: Self.firstBackoff, max: Self.maxBackoff, failures: entries[index].failures)
            entries[index].failures += 1
            entries[index].retryAt = now + TimeAmount(backoff)
        }
        EdgeMetrics.upstreamUp(upstreams[index], false)
    }

    public func succeeded(_ index: Int) {
        entries.withLockedValue { $0[index] = Entry() }
        EdgeMetrics.upstreamUp(upstreams[index], true)
    }

    /// Failures in a row, per upstream (for the admin API and tests).
    public var failures: [Int] { entries.withLockedValue { $0.map(\.failures) } }
}
