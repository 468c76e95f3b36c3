import Testing

@testable import SRT

/// `HandshakeWaitBudget`: what libsrt's listen callback may spend waiting for the admission,
/// per handshake and per second, so that a flood of handshakes cannot hold the thread that
/// reads every caller's packets.
@Suite struct HandshakeWaitBudgetTests {
    @Test func eachHandshakeWaitsAtMostItsShareAndAllOfThemAtMostTheSecondsBudget() {
        let budget = HandshakeWaitBudget(perHandshake: .milliseconds(100), perSecond: .milliseconds(250), countPerSecond: 1000)
        let start = ContinuousClock.now
        #expect(budget.allowance(now: start) == .milliseconds(100))
        budget.spend(.milliseconds(100), now: start)
        budget.spend(.milliseconds(100), now: start + .milliseconds(100))
        // 50 ms left in this second: the next handshake may wait that long, no longer.
        #expect(budget.allowance(now: start + .milliseconds(200)) == .milliseconds(50))
        budget.spend(.milliseconds(49), now: start + .milliseconds(250))
        // Less than a round trip left: no wait at all (the admission decides after the handshake).
        #expect(budget.allowance(now: start + .milliseconds(300)) == nil)
        // A new second, a new budget.
        #expect(budget.allowance(now: start + .milliseconds(1000)) == .milliseconds(100))
    }

    @Test func answeredHandshakesCostOnlyWhatTheyWaited() {
        let budget = HandshakeWaitBudget(perHandshake: .milliseconds(100), perSecond: .milliseconds(250), countPerSecond: 1000)
        let start = ContinuousClock.now
        // 150 handshakes answered in 1 ms each: each could still have waited 100 ms.
        for step in 0..<150 {
            let now = start + .microseconds(step * 100)
            #expect(budget.allowance(now: now) == .milliseconds(100))
            budget.spend(.milliseconds(1), now: now)
        }
        budget.spend(.milliseconds(1), now: start + .milliseconds(20))
        #expect(budget.allowance(now: start + .milliseconds(25)) == .milliseconds(99))
    }

    @Test func atMostSoManyHandshakesWaitInASecondHoweverQuicklyTheyAreAnswered() {
        let budget = HandshakeWaitBudget(perHandshake: .milliseconds(100), perSecond: .milliseconds(250), countPerSecond: 3)
        let start = ContinuousClock.now
        for _ in 0..<3 {
            #expect(budget.allowance(now: start) != nil)
            budget.spend(.microseconds(100), now: start)
        }
        #expect(budget.allowance(now: start + .milliseconds(500)) == nil)
        #expect(budget.allowance(now: start + .seconds(1)) == .milliseconds(100))
    }

    @Test func zeroTurnsWaitingOff() {
        #expect(HandshakeWaitBudget(perHandshake: .zero, perSecond: .milliseconds(250), countPerSecond: 100).allowance() == nil)
        #expect(HandshakeWaitBudget(perHandshake: .milliseconds(100), perSecond: .zero, countPerSecond: 100).allowance() == nil)
    }
}
