import Synchronization

/// How long libsrt's listen callback may wait for the admission's side-effect-free check
/// (`SessionAdmission.refusalWithoutSideEffects`: a key the coordinator checks, a JWT).
///
/// The callback runs on the thread that reads every SRT packet of the listener's port, the
/// publishers' media and the players' acknowledgements. While it waits, those packets queue
/// in the socket's receive buffer and are read late, which SRT's latency window absorbs for
/// tens of milliseconds, not for long. So each handshake waits at most `perHandshake`, and
/// all of them together at most `perSecond` in any second, and at most `countPerSecond`
/// handshakes wait in a second: a flood of handshakes with made-up keys costs the port's
/// traffic that much, and the coordinator that many questions, and no more. A handshake that finds the
/// budget spent is not refused for it; it completes, and the admission decides after it,
/// closing the connection if it refuses (as before this budget existed).
final class HandshakeWaitBudget: Sendable {
    let perHandshake: Duration
    let perSecond: Duration
    let countPerSecond: Int
    /// The second the spending is counted in, and what was spent in it, in how many waits.
    private let spent = Mutex<(since: ContinuousClock.Instant, total: Duration, waits: Int)>((.now, .zero, 0))

    /// The shortest wait worth starting: less cannot cover a round trip to anyone.
    static let shortest: Duration = .milliseconds(2)

    init(perHandshake: Duration, perSecond: Duration, countPerSecond: Int) {
        self.perHandshake = perHandshake
        self.perSecond = perSecond
        self.countPerSecond = countPerSecond
    }

    /// How long the next handshake may wait (nil: the budget of this second is spent, or
    /// waiting is turned off), counted as one wait. The caller reports what it waited with
    /// `spend`.
    func allowance(now: ContinuousClock.Instant = .now) -> Duration? {
        spent.withLock { spent in
            if now - spent.since >= .seconds(1) { spent = (now, .zero, 0) }
            let left = min(perHandshake, perSecond - spent.total)
            guard left >= Self.shortest, spent.waits < countPerSecond else { return nil }
            spent.waits += 1
            return left
        }
    }

    func spend(_ waited: Duration, now: ContinuousClock.Instant = .now) {
        spent.withLock { spent in
            if now - spent.since >= .seconds(1) { spent = (now, .zero, 0) }
            spent.total += waited
        }
    }
}
