import Testing

@testable import SRT

/// `HandshakeWaitBudget`: what libsrt's listen callback may spend waiting for the admission,
/// per handshake, and in all (buckets of time and of count that refill continuously), so
/// that a flood of handshakes cannot hold the thread that reads every caller's packets.
@Suite struct HandshakeWaitBudgetTests {
    @Test func eachHandshakeWaitsAtMostItsShareAndAllOfThemAtMostTheBucket() {
        let start = ContinuousClock.now
        let budget = HandshakeWaitBudget(perHandshake: .milliseconds(30), perSecond: .milliseconds(100), countPerSecond: 1000, now: start)
        #expect(budget.allowance(now: start) == .milliseconds(30))
        budget.spend(.milliseconds(30), now: start)
        budget.spend(.milliseconds(30), now: start)
        budget.spend(.milliseconds(30), now: start)
        // 10 ms left: the next handshake may wait that long, no longer.
        #expect(budget.allowance(now: start) == .milliseconds(10))
        budget.spend(.milliseconds(9), now: start)
        // Less than a round trip left: no wait at all (the admission decides after the handshake).
        #expect(budget.allowance(now: start) == nil)
        // Refilled continuously, 100 ms a second: 50 ms later, 5 ms more; a second later, full.
        let half = budget.allowance(now: start + .milliseconds(50))
        #expect(half.map { $0 > .milliseconds(5) && $0 < .milliseconds(7) } == true, "\(String(describing: half))")
        #expect(budget.allowance(now: start + .seconds(2)) == .milliseconds(30))
    }

    @Test func noRollingSecondHoldsMoreThanTheBucketAndWhatRefilled() {
        // A flood of handshakes, each waiting all it may, every millisecond for 3 s.
        let start = ContinuousClock.now
        let budget = HandshakeWaitBudget(perHandshake: .milliseconds(30), perSecond: .milliseconds(100), countPerSecond: 10_000, now: start)
        var waited: [(at: Duration, wait: Duration)] = []
        for step in 0..<3000 {
            let now = start + .milliseconds(step)
            if let allowed = budget.allowance(now: now) {
                budget.spend(allowed, now: now)
                waited.append((.milliseconds(step), allowed))
            }
        }
        for window in stride(from: 0, to: 2000, by: 100) {
            let inWindow = waited.filter { $0.at >= .milliseconds(window) && $0.at < .milliseconds(window + 1000) }
            let total = inWindow.reduce(Duration.zero) { $0 + $1.wait }
            #expect(total <= .milliseconds(201), "\(total) waited in the second from \(window) ms")
        }
    }

    @Test func atMostSoManyHandshakesWaitInASecondHoweverQuicklyTheyAreAnswered() {
        let start = ContinuousClock.now
        let budget = HandshakeWaitBudget(perHandshake: .milliseconds(30), perSecond: .milliseconds(100), countPerSecond: 3, now: start)
        for _ in 0..<3 {
            #expect(budget.allowance(now: start) != nil)
            budget.spend(.microseconds(100), now: start)
        }
        #expect(budget.allowance(now: start) == nil)
        #expect(budget.allowance(now: start + .seconds(1)) == .milliseconds(30))
    }

    @Test func zeroTurnsWaitingOff() {
        #expect(HandshakeWaitBudget(perHandshake: .zero, perSecond: .milliseconds(100), countPerSecond: 100).allowance() == nil)
        #expect(HandshakeWaitBudget(perHandshake: .milliseconds(30), perSecond: .zero, countPerSecond: 100).allowance() == nil)
    }
}
