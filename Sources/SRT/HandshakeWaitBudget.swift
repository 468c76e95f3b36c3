import Synchronization

/// How long libsrt's listen callback may wait for the admission's side-effect-free check
/// (`SessionAdmission.refusalWithoutSideEffects`: a key the coordinator checks, a JWT).
///
/// The callback runs on the thread that reads every SRT packet of the listener's port, the
/// publishers' media and the players' acknowledgements. While it waits, those packets queue
/// in the socket's receive buffer and are read late, which leaves less of SRT's latency for
/// a lost packet's retransmission. So each handshake waits at most `perHandshake`; and the
/// waits draw on two token buckets, of time (`perSecond` of waiting in any second, refilled
/// continuously) and of count (`countPerSecond` waits): a flood of handshakes with made-up
/// keys costs the port's traffic that much, and the coordinator that many questions, and no
/// more. A handshake that finds a bucket empty is not refused for it; it completes, and the
/// admission decides after it, closing the connection if it refuses.
final class HandshakeWaitBudget: Sendable {
    let perHandshake: Duration
    let perSecond: Duration
    let countPerSecond: Int
    /// The buckets: waiting time and waits left, as of `at`.
    private let buckets: Mutex<(time: Duration, count: Double, at: ContinuousClock.Instant)>

    /// The shortest wait worth starting: less cannot cover a round trip to anyone.
    static let shortest: Duration = .milliseconds(2)

    init(perHandshake: Duration, perSecond: Duration, countPerSecond: Int, now: ContinuousClock.Instant = .now) {
        self.perHandshake = perHandshake
        self.perSecond = perSecond
        self.countPerSecond = countPerSecond
        buckets = Mutex((perSecond, Double(countPerSecond), now))
    }

    /// How long the next handshake may wait (nil: a bucket is empty, or waiting is turned
    /// off), taken from the count at once. The caller reports what it waited with `spend`.
    func allowance(now: ContinuousClock.Instant = .now) -> Duration? {
        buckets.withLock { buckets in
            refill(&buckets, now: now)
            let left = min(perHandshake, buckets.time)
            guard left >= Self.shortest, buckets.count >= 1 else { return nil }
            buckets.count -= 1
            return left
        }
    }

    func spend(_ waited: Duration, now: ContinuousClock.Instant = .now) {
        buckets.withLock { buckets in
            refill(&buckets, now: now)
            buckets.time = max(buckets.time - waited, .zero)
        }
    }

    private func refill(_ buckets: inout (time: Duration, count: Double, at: ContinuousClock.Instant), now: ContinuousClock.Instant) {
        guard now > buckets.at else { return }
        let (seconds, attoseconds) = (now - buckets.at).components
        let elapsed = Double(seconds) + Double(attoseconds) / 1e18
        buckets.time = min(perSecond, buckets.time + perSecond * elapsed)
        buckets.count = min(Double(countPerSecond), buckets.count + Double(countPerSecond) * elapsed)
        buckets.at = now
    }
}
