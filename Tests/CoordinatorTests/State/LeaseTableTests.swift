import Cluster
import Foundation
import Synchronization
import Testing

@testable import Coordinator

/// Leases from beacons (issue 23, item 3): a late beacon is tolerated up to the lease, a
/// silent node is probed once, a busy node whose beacons come keeps its jobs however late its
/// heartbeats, and the coordinator judges nobody while its own beacon is late.
struct LeaseTableTests {
    final class UptimeClock: Sendable {
        let nanoseconds = Atomic<UInt64>(1_000_000_000)
        func advance(milliseconds: UInt64) { nanoseconds.add(milliseconds * 1_000_000, ordering: .relaxed) }
    }

    @Test func aLateBeaconIsToleratedUpToTheLease() {
        let clock = UptimeClock()
        let table = LeaseTable(settings: .init(), clock: { clock.nanoseconds.load(ordering: .relaxed) })
        table.beat("local")
        table.beat("transcode-1")
        clock.advance(milliseconds: 450)
        table.beat("local")
        #expect(table.judge(localNodeID: "local") == .init())
        clock.advance(milliseconds: 100)  // 550 ms: suspect, probed once
        table.beat("local")
        #expect(table.judge(localNodeID: "local") == .init(expired: [], suspects: ["transcode-1"]))
        #expect(table.judge(localNodeID: "local") == .init(), "a suspect is probed once per silence")
        #expect(table.holdsLease("transcode-1"))
        clock.advance(milliseconds: 400)  // 950 ms: a beacon just in time renews the lease
        table.beat("local")
        table.beat("transcode-1")
        clock.advance(milliseconds: 600)
        table.beat("local")
        #expect(table.judge(localNodeID: "local") == .init(expired: [], suspects: ["transcode-1"]), "a new silence is probed again")
        clock.advance(milliseconds: 450)  // 1050 ms
        table.beat("local")
        #expect(table.judge(localNodeID: "local") == .init(expired: ["transcode-1"], suspects: []))
        #expect(!table.holdsLease("transcode-1"))
        table.forget("transcode-1")
        #expect(table.judge(localNodeID: "local") == .init())
    }

    @Test func nobodyIsJudgedWhileTheCoordinatorsOwnBeaconIsLate() {
        let clock = UptimeClock()
        let table = LeaseTable(settings: .init(), clock: { clock.nanoseconds.load(ordering: .relaxed) })
        table.beat("local")
        table.beat("relay-1")
        clock.advance(milliseconds: 2000)
        // Our own intake stalled as long as theirs: every lease is extended.
        #expect(table.judge(localNodeID: "local") == .init())
        table.beat("local")
        #expect(table.judge(localNodeID: "local") == .init(expired: ["relay-1"], suspects: []))
    }

    /// A node's word that it leaves is taken at the next look, even while the coordinator's
    /// own beacon is late: it is not probed, and it does not expire. A beacon its thread sent
    /// as it stopped does not undo the word; a beacon later (a restart under the same id)
    /// starts a new lease.
    @Test func aNodeThatSaysItLeavesIsReportedAsLeftNotProbedOrExpired() {
        let clock = UptimeClock()
        let table = LeaseTable(settings: .init(), clock: { clock.nanoseconds.load(ordering: .relaxed) })
        table.beat("local")
        table.beat("ingest-1")
        table.beat("ingest-2")
        table.leave("ingest-1")
        clock.advance(milliseconds: 100)
        table.beat("ingest-1")  // the beacon thread's last, after the word
        #expect(table.judge(localNodeID: "local") == .init(left: ["ingest-1"]))
        clock.advance(milliseconds: 2000)
        // The coordinator's own beacon is late: nobody is judged, but a word is a word.
        #expect(table.judge(localNodeID: "local") == .init(left: ["ingest-1"]))
        table.beat("local")
        #expect(table.judge(localNodeID: "local") == .init(expired: ["ingest-2"], suspects: [], left: ["ingest-1"]))
        // The coordinator's own word is not its own departure.
        table.leave("local")
        #expect(table.judge(localNodeID: "local").left == ["ingest-1"])
        // Half a second after its word, a beacon is a new process: alive again.
        table.beat("ingest-1")
        #expect(table.judge(localNodeID: "local").left == [])
        #expect(table.holdsLease("ingest-1"))
    }

    @Test func theTableIsBounded() {
        var settings = LeaseTable.Settings()
        settings.maxNodes = 3
        let table = LeaseTable(settings: settings)
        for index in 0..<10 { table.beat("node-\(index)") }
        #expect(table.count == 3)
        table.beat("node-1")
        #expect(table.count == 3)
    }

    @Test func aNodeWithALeaseIsAliveHoweverLateItsHeartbeatsAndOneWithoutIsDeadAtItsLeasesEnd() async throws {
        let fixture = try await CoordinatorFixture()
        let clock = UptimeClock()
        let leases = LeaseTable(settings: .init(), clock: { clock.nanoseconds.load(ordering: .relaxed) })
        let probed = Mutex<[String]>([])
        await fixture.state.setLiveness(.init(leases: leases) { nodeID in
            probed.withLock { $0.append(nodeID) }
            return nodeID == "transcode-2"  // its connection is gone
        })
        try await fixture.register("transcode-1", .transcode)
        try await fixture.register("transcode-2", .transcode)
        leases.beat("transcode-1")
        leases.beat("transcode-2")
        // transcode-1 is busy: no heartbeat for 10 s, but its beacons come.
        for _ in 0..<40 {
            fixture.clock.advance(by: 0.25)
            clock.advance(milliseconds: 250)
            leases.beat("transcode-1")
            let departures = await fixture.state.judgeLeases()
            #expect(departures.left.isEmpty)
            try await fixture.state.sweep(gone: departures.gone)
        }
        let nodes = try await fixture.state.nodes()
        #expect(nodes.first { $0.id == "transcode-1" }?.state == "alive")
        #expect(nodes.first { $0.id == "transcode-2" }?.state == "dead")
        #expect(probed.withLock { $0 } == ["transcode-2"], "probed once, once silent for 500 ms")
        #expect(try await fixture.state.events().contains { $0.kind == "node.dead" && $0.subject == "transcode-2" && $0.detail.contains("lease") })
        try await fixture.close()
    }
}
