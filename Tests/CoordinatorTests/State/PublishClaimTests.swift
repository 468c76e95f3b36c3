import Cluster
import Foundation
import Synchronization
import Testing

@testable import Coordinator

/// The cluster's one-publisher rule as a lock (`PublishClaims`): of two ingests that claim a
/// stream at the same moment one is refused, for a window that only has to cover an
/// admission until the bus can answer; a claim of a node that lost its lease is void; the
/// table is bounded and never refuses for its own sake.
struct PublishClaimTests {
    @Test func theFirstClaimHoldsTheStreamForThreeSecondsAgainstOtherIngests() async throws {
        let fixture = try await CoordinatorFixture()
        let state = fixture.state
        #expect(await state.claimPublication(app: "live", name: "cam", node: "ingest-1") == nil)
        #expect(await state.claimPublication(app: "live", name: "cam", node: "ingest-2") == "ingest-1")
        // The holder may claim again (a retry there); other streams are free.
        #expect(await state.claimPublication(app: "live", name: "cam", node: "ingest-1") == nil)
        #expect(await state.claimPublication(app: "live", name: "other", node: "ingest-2") == nil)
        fixture.clock.advance(by: 1)
        #expect(await state.claimPublication(app: "live", name: "cam", node: "ingest-1") == nil)
        fixture.clock.advance(by: 2.5)
        #expect(await state.claimPublication(app: "live", name: "cam", node: "ingest-2") == "ingest-1", "the holder's retry did not renew its claim")
        fixture.clock.advance(by: 3.1)
        #expect(await state.claimPublication(app: "live", name: "cam", node: "ingest-2") == nil, "a claim outlived its window")
        #expect(await state.claimPublication(app: "live", name: "cam", node: "ingest-1") == "ingest-2")
        // The sweep drops what ran out.
        fixture.clock.advance(by: 10)
        try await state.sweep()
        #expect(await state.publishClaims.count == 0)
        try await fixture.close()
    }

    /// An ingest whose bus question was answered yes by the holder's ingest (its publisher
    /// gone or idle, closed: the stream handed over) takes the claim over; without it the
    /// stream would have no publisher anywhere until the claim ran out.
    @Test func aClaimAfterTheHolderHandedTheStreamOverTakesItOver() async throws {
        let fixture = try await CoordinatorFixture()
        let state = fixture.state
        #expect(await state.claimPublication(app: "live", name: "cam", node: "ingest-1") == nil)
        fixture.clock.advance(by: 1)
        #expect(await state.claimPublication(app: "live", name: "cam", node: "ingest-2") == "ingest-1")
        #expect(await state.claimPublication(app: "live", name: "cam", node: "ingest-2", handedOver: true) == nil)
        #expect(await state.claimPublication(app: "live", name: "cam", node: "ingest-1") == "ingest-2")
        try await fixture.close()
    }

    /// Concurrent claims of one stream by many ingests: exactly one is granted.
    @Test func ofManyIngestsClaimingAtOnceExactlyOneIsGranted() async throws {
        let fixture = try await CoordinatorFixture()
        let state = fixture.state
        let granted = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<16 {
                group.addTask { await state.claimPublication(app: "live", name: "race", node: "ingest-\(index)") == nil }
            }
            var granted = 0
            for await yes in group where yes { granted += 1 }
            return granted
        }
        #expect(granted == 1)
        try await fixture.close()
    }

    @Test func aClaimOfANodeThatLostItsLeaseIsVoid() async throws {
        let fixture = try await CoordinatorFixture()
        let clock = LeaseTableTests.UptimeClock()
        let leases = LeaseTable(settings: .init(), clock: { clock.nanoseconds.load(ordering: .relaxed) })
        await fixture.state.setLiveness(.init(leases: leases) { _ in false })
        leases.beat("ingest-1")
        leases.beat("ingest-2")
        #expect(await fixture.state.claimPublication(app: "live", name: "cam", node: "ingest-1") == nil)
        #expect(await fixture.state.claimPublication(app: "live", name: "cam", node: "ingest-2") == "ingest-1")
        // ingest-1 dies a moment after admitting its publisher, which reconnects to ingest-2.
        clock.advance(milliseconds: 1100)
        leases.beat("ingest-2")
        #expect(await fixture.state.claimPublication(app: "live", name: "cam", node: "ingest-2") == nil)
        try await fixture.close()
    }

    @Test func theTableIsBoundedAndGrantsWithoutHoldingWhenFull() {
        var claims = PublishClaims()
        let start = Date(timeIntervalSince1970: 1_000_000)
        for index in 0..<PublishClaims.maxClaims {
            #expect(claims.claim(.init(app: "live", name: "s\(index)"), by: "ingest-1", now: start) == nil)
        }
        #expect(claims.count == PublishClaims.maxClaims)
        // Full: a new stream's claim is granted, not held (the bus rule alone decides it).
        #expect(claims.claim(.init(app: "live", name: "new"), by: "ingest-1", now: start) == nil)
        #expect(claims.claim(.init(app: "live", name: "new"), by: "ingest-2", now: start) == nil)
        #expect(claims.count == PublishClaims.maxClaims)
        // Held claims still hold.
        #expect(claims.claim(.init(app: "live", name: "s0"), by: "ingest-2", now: start) == "ingest-1")
        // Once they run out, the next claim prunes them and is held.
        let later = start.addingTimeInterval(PublishClaims.window + 1)
        #expect(claims.claim(.init(app: "live", name: "new"), by: "ingest-2", now: later) == nil)
        #expect(claims.count == 1)
        #expect(claims.claim(.init(app: "live", name: "new"), by: "ingest-1", now: later) == "ingest-2")
    }
}
