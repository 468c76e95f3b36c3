import Cluster
import Foundation
import GRDB
import Testing

@testable import Coordinator

/// Bounded history: refused keys folded into one event per stream a minute, and the
/// retention pass that deletes old events, ended sessions, dead nodes and revoked keys.
struct RetentionTests {
    static let day: TimeInterval = 86_400

    static func refusals(_ fixture: CoordinatorFixture) async throws -> [EventSummary] {
        try await fixture.state.events(limit: 10_000).filter { $0.kind == "key.refused" }
    }

    // MARK: Refused keys

    @Test func refusalsOfOneStreamAreOneEventAMinute() async throws {
        let fixture = try await CoordinatorFixture()
        let start = fixture.clock.now
        var accepted = 0
        // 1000 made-up keys within 50 s.
        for _ in 0..<1000 {
            if try await fixture.state.verifyStreamKey(app: "live", name: "cam", key: "guess") { accepted += 1 }
            fixture.clock.advance(by: 0.05)
        }
        #expect(accepted == 0)
        var events = try await Self.refusals(fixture)
        #expect(events.count == 1)
        #expect(events.first?.subject == "live/cam")
        #expect(events.first?.detail == "")

        // Another stream is not folded into the first one's window.
        #expect(try await !fixture.state.verifyStreamKey(app: "live", name: "other", key: "guess"))
        #expect(try await Self.refusals(fixture).count == 2)

        // Over a minute after the first event (the 1000 steps of 0.05 s are not exact in a
        // Date, hence the margin), the next refusal writes the next one, counting the 999
        // folded and itself.
        fixture.clock.advance(by: 11)
        #expect(try await !fixture.state.verifyStreamKey(app: "live", name: "cam", key: "guess"))
        events = try await Self.refusals(fixture)
        #expect(events.count == 3)
        #expect(events.first?.subject == "live/cam")
        #expect(events.first?.detail == "1000 refusals since \(start)")

        // Refusals that stop within a window are told by the sweep once the window is over.
        let windowStart = fixture.clock.now
        for _ in 0..<5 {
            fixture.clock.advance(by: 1)
            #expect(try await !fixture.state.verifyStreamKey(app: "live", name: "cam", key: "guess"))
        }
        try await fixture.state.sweep()
        #expect(try await Self.refusals(fixture).count == 3)
        fixture.clock.advance(by: 60)
        try await fixture.state.sweep()
        events = try await Self.refusals(fixture)
        #expect(events.count == 4)
        #expect(events.first?.detail == "5 refusals since \(windowStart)")
        // Nothing folded since: later sweeps write nothing more.
        fixture.clock.advance(by: 120)
        try await fixture.state.sweep()
        try await fixture.state.sweep()
        #expect(try await Self.refusals(fixture).count == 4)
        try await fixture.close()
    }

    @Test func theRefusalTableIsBoundedAndFoldsFurtherStreamsTogether() {
        typealias Key = CoordinatorState.StreamKey
        var audit = RefusedKeyAudit(window: 60, capacity: 2)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        var written: [[String]] = []
        for name in ["a", "b", "a"] {
            written.append(audit.refused(Key(app: "live", name: name), at: start).map(\.subject))
        }
        #expect(written == [["live/a"], ["live/b"], []])
        // Full of recent streams: made-up names share one subject, and one event a minute.
        let overflowed = audit.refused(Key(app: "live", name: "c"), at: start)
        #expect(overflowed.map(\.subject) == [RefusedKeyAudit.overflowSubject])
        var folded: [RefusedKeyAudit.Event] = []
        for index in 0..<100 {
            folded += audit.refused(Key(app: "live", name: "made-up-\(index)"), at: start.addingTimeInterval(1))
        }
        #expect(folded.isEmpty)
        #expect(audit.entries.count == 2)

        // A minute on, the full table forgets the streams whose window is over, telling the
        // refusals folded into one of them, and takes the new stream.
        let later = start.addingTimeInterval(60)
        let events = audit.refused(Key(app: "live", name: "d"), at: later)
        #expect(events == [
            RefusedKeyAudit.Event(subject: "live/a", detail: "1 refusal since \(start)"),
            RefusedKeyAudit.Event(subject: "live/d", detail: ""),
        ])
        #expect(Set(audit.entries.keys) == [Key(app: "live", name: "d")])
        // The overflow's refusals are told when its window is over (c, then 100 made up).
        let flushed = audit.flush(at: later)
        #expect(flushed == [RefusedKeyAudit.Event(subject: "*", detail: "100 refusals since \(start)")])
        // A window on, nothing was folded: everything is forgotten.
        let quiet = audit.flush(at: later.addingTimeInterval(60))
        #expect(quiet.isEmpty)
        #expect(audit.entries.isEmpty)
        #expect(audit.overflow == nil)
    }

    // MARK: Retention

    @Test func historyOlderThanItsRetentionIsPrunedAndTheRestStays() async throws {
        let fixture = try await CoordinatorFixture()
        let start = fixture.clock.now
        // A session that ends now, transcoded on a node that dies with its ingest.
        try await fixture.register("ingest-old", .ingest)
        try await fixture.register("tc-old", .transcode)
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "gone", ingestNode: "ingest-old", facts: .sample))
        #expect(try await fixture.state.lookup(app: "live", name: "gone")?.renditions.first?.transcoderNode == "tc-old")
        try await fixture.state.streamEnded(app: "live", name: "gone", ingestNode: "ingest-old")
        // A session (no ladder) still live on that ingest when it dies, eight days on.
        try await fixture.state.streamStarted(StreamStart(app: "plain", name: "late", ingestNode: "ingest-old"))
        // Nodes that stay alive, with a live stream and its job.
        try await fixture.register("ingest-1", .ingest)
        try await fixture.register("tc-1", .transcode)
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam", ingestNode: "ingest-1", facts: .sample))
        let revokedFirst = try await fixture.state.createStreamKey(app: "live", name: "cam")
        let kept = try await fixture.state.createStreamKey(app: "live", name: "cam")
        let revokedLater = try await fixture.state.createStreamKey(app: "live", name: "cam")
        #expect(try await fixture.state.revokeStreamKey(id: revokedFirst.id))
        #expect(try await !fixture.state.verifyStreamKey(app: "live", name: "cam", key: "guess"))
        let oldEvents = try await fixture.state.events(limit: 10_000).count
        #expect(oldEvents > 10)

        // Eight days on: a relay registers, and dies 10 s later; the alive nodes heartbeat.
        fixture.clock.advance(by: 8 * Self.day)
        try await fixture.register("relay-2", .relay)
        fixture.clock.advance(by: 10)
        let camRungs = CoordinatorFixture.ladder.map(\.name)
        _ = try await fixture.state.heartbeat(nodeID: "ingest-1", load: 0, streams: [.publishing(app: "live", name: "cam", facts: .sample)])
        _ = try await fixture.state.heartbeat(nodeID: "tc-1", load: 1, streams: [.transcoding(app: "live", name: "cam", rungs: camRungs)])
        try await fixture.state.sweep()
        #expect(try await fixture.state.nodes().filter { $0.state == "dead" }.map(\.id) == ["ingest-old", "relay-2", "tc-old"])
        #expect(try await fixture.state.revokeStreamKey(id: revokedLater.id))
        let now = fixture.clock.now

        var counts = try await fixture.state.pruneHistory(now: now)
        // live/gone with its two renditions; tc-old, which only they named. ingest-old
        // stays: plain/late ended just now (its death) and names it.
        #expect(counts.streams == 1)
        #expect(counts.renditions == 2)
        #expect(counts.nodes == 1)
        #expect(counts.streamKeys == 0)  // revoked 8 days ago: kept 30
        #expect(counts.events == oldEvents)
        #expect(!counts.isPartial)
        #expect(try await fixture.state.nodes().map(\.id) == ["ingest-1", "ingest-old", "relay-2", "tc-1"])
        #expect(try await Self.sessions(fixture) == ["plain/late ended", "live/cam live"])
        #expect(try await fixture.state.lookup(app: "live", name: "cam")?.renditions.map(\.state) == [RenditionState.running, .running])
        #expect(try await fixture.state.streamKeys().map(\.id) == [revokedFirst.id, kept.id, revokedLater.id])
        let events = try await fixture.state.events(limit: 10_000)
        #expect(!events.isEmpty)
        #expect(events.allSatisfy { $0.time > start.addingTimeInterval(Self.day) })
        #expect(try await Self.foreignKeyViolations(fixture) == 0)
        // A second pass finds nothing to do.
        #expect(try await fixture.state.pruneHistory(now: now).isEmpty)

        // Thirty-one days after the start: the key revoked then goes, the one revoked on day
        // 8 and the unrevoked one stay. plain/late has aged out, and ingest-old with it (in
        // the same pass: sessions go before nodes), and relay-2, dead since day 8.
        fixture.clock.advance(by: 23 * Self.day)
        counts = try await fixture.state.pruneHistory(now: fixture.clock.now)
        #expect(counts.streamKeys == 1)
        #expect(counts.streams == 1)
        #expect(counts.nodes == 2)
        #expect(try await fixture.state.streamKeys().map(\.id) == [kept.id, revokedLater.id])
        #expect(try await fixture.state.verifyStreamKey(app: "live", name: "cam", key: kept.key))
        // Alive nodes and live streams stay however old they are (no sweep ran since).
        #expect(try await fixture.state.nodes().map(\.id) == ["ingest-1", "tc-1"])
        #expect(try await Self.sessions(fixture) == ["live/cam live"])
        #expect(try await Self.foreignKeyViolations(fixture) == 0)
        try await fixture.close()
    }

    @Test func eventsBeyondTheCapGoOldestFirst() async throws {
        let fixture = try await CoordinatorFixture(configuration: CoordinatorConfiguration(retention: CoordinatorRetention(maxEvents: 50)))
        try await Self.insertEvents(120, into: fixture)
        let before = try await fixture.state.events(limit: 1000)
        #expect(before.count == 121)  // with coordinator.started

        let counts = try await fixture.state.pruneHistory(now: fixture.clock.now)
        #expect(counts.events == 71)
        #expect(counts.total == 71)
        let after = try await fixture.state.events(limit: 1000)
        #expect(after.map(\.id) == before.prefix(50).map(\.id))
        #expect(after.last?.subject == "70")
        try await fixture.close()
    }

    @Test func aBacklogIsPrunedInBatches() async throws {
        let fixture = try await CoordinatorFixture(configuration: CoordinatorConfiguration(
            retention: CoordinatorRetention(maxEvents: 50, maxRowsPerPass: 30)
        ))
        try await Self.insertEvents(120, into: fixture)
        var passes: [PruneCounts] = []
        for _ in 0..<4 {
            passes.append(try await fixture.state.pruneHistory(now: fixture.clock.now))
        }
        #expect(passes.map(\.events) == [30, 30, 11, 0])
        #expect(passes.map(\.isPartial) == [true, true, false, false])
        #expect(try await fixture.state.events(limit: 1000).count == 50)
        try await fixture.close()
    }

    /// `run()` prunes at its first sweep, then every `retention.interval` of the clock.
    @Test func runPrunesHistory() async throws {
        let fixture = try await CoordinatorFixture(configuration: CoordinatorConfiguration(
            sweepInterval: .milliseconds(5), retention: CoordinatorRetention(maxEvents: 10)
        ))
        try await Self.insertEvents(20, into: fixture)
        let state = fixture.state
        let running = Task { await state.run() }
        #expect(try await Self.eventCount(of: fixture, fallingTo: 10) == 10)

        // Within the interval (the clock has not moved), new events stay beyond the cap.
        try await Self.insertEvents(5, into: fixture)
        try await Task.sleep(for: .milliseconds(100))
        #expect(try await fixture.state.events(limit: 1000).count == 15)
        // An interval later they go.
        fixture.clock.advance(by: 60)
        #expect(try await Self.eventCount(of: fixture, fallingTo: 10) == 10)
        running.cancel()
        await running.value
        try await fixture.close()
    }

    // MARK: Helpers

    /// `count` events at the clock's time, subjects "0", "1", …
    static func insertEvents(_ count: Int, into fixture: CoordinatorFixture) async throws {
        let time = fixture.clock.now
        try await fixture.store.write { db in
            for index in 0..<count {
                try EventRecord.record(db, time: time, kind: "test.filler", subject: "\(index)")
            }
        }
    }

    /// The number of events once it is down to `target`, or after 5 s of waiting.
    static func eventCount(of fixture: CoordinatorFixture, fallingTo target: Int) async throws -> Int {
        var count = try await fixture.state.events(limit: 1000).count
        for _ in 0..<500 {
            if count <= target { break }
            try await Task.sleep(for: .milliseconds(10))
            count = try await fixture.state.events(limit: 1000).count
        }
        return count
    }

    /// Every publish session in the file, as "app/name state", oldest first.
    static func sessions(_ fixture: CoordinatorFixture) async throws -> [String] {
        try await fixture.store.read { db in
            try StreamRecord.order(StreamRecord.Columns.id).fetchAll(db).map { "\($0.app)/\($0.name) \($0.state.rawValue)" }
        }
    }

    /// Rows whose foreign key points nowhere.
    static func foreignKeyViolations(_ fixture: CoordinatorFixture) async throws -> Int {
        try await fixture.store.read { db in try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").count }
    }
}
