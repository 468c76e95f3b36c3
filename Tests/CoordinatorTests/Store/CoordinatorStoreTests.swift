import Cluster
import Foundation
import GRDB
import Testing

@testable import Coordinator

/// The store on a real SQLite file: schema, WAL, and what survives a reopen.
struct CoordinatorStoreTests {
    /// Every migration, in the order a new file gets them.
    static let migrations = ["v1-nodes-streams-renditions-keys-events", "v2-indexes-for-sweep-and-retention", "v3-edge-role", "v4-skipped-renditions", "v5-drain-handover", "v6-multitrack", "v7-left-nodes"]

    @Test func migrationsCreateTheTablesAndWALIsOn() async throws {
        let fixture = try await CoordinatorFixture()
        #expect(try await fixture.store.appliedMigrations() == Self.migrations)
        #expect(try await fixture.store.journalMode() == "wal")
        let tables = try await fixture.store.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'grdb_%' ORDER BY name")
        }
        #expect(tables == ["events", "nodes", "renditions", "stream_keys", "streams"])
        let streamColumns = try await fixture.store.read { db in try db.columns(in: "streams").map(\.name) }
        for column in ["ingest_node", "container", "video_codec", "video_profile", "width", "height", "frame_rate", "video_bit_rate",
                       "audio_codec", "audio_bit_rate", "audio_sample_rate", "audio_channels", "started_at", "ended_at", "bytes"] {
            #expect(streamColumns.contains(column), "streams.\(column)")
        }
        #expect(FileManager.default.fileExists(atPath: fixture.path + "-wal"))
        try await fixture.close()
    }

    @Test func reopeningAppliesNoMigrationTwice() async throws {
        let fixture = try await CoordinatorFixture()
        try await fixture.reopen()
        #expect(try await fixture.store.appliedMigrations() == Self.migrations)
        try await fixture.close()
    }

    @Test func aSecondCoordinatorOnTheSameFileIsRefusedUntilTheFirstCloses() async throws {
        let fixture = try await CoordinatorFixture()
        await #expect(throws: CoordinatorStoreError.inUse(path: fixture.path)) {
            _ = try await CoordinatorStore.open(at: fixture.path)
        }
        try await fixture.close()
        let second = try await CoordinatorStore.open(at: fixture.path)
        #expect(try await second.appliedMigrations() == Self.migrations)
        try await second.close()
    }

    @Test func aFileThatCannotBeCreatedIsRefusedWithItsPath() async throws {
        let path = "/nonexistent-estuary-directory/estuary.sqlite"
        do {
            _ = try await CoordinatorStore.open(at: path)
            Issue.record("opened \(path)")
        } catch let error as CoordinatorStoreError {
            guard case .cannotOpen(let reported, _) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(reported == path)
            #expect(error.description.contains("--database"))
        }
    }

    @Test func sqliteEnforcesOneLiveSessionPerStream() async throws {
        let fixture = try await CoordinatorFixture()
        try await fixture.register("ingest-1", .ingest)
        let time = fixture.clock.now
        await #expect(throws: DatabaseError.self) {
            try await fixture.store.write { db in
                for _ in 0..<2 {
                    var stream = StreamRecord(app: "live", name: "cam", ingestNode: "ingest-1", facts: .sample, startedAt: time)
                    try stream.insert(db)
                }
            }
        }
        try await fixture.close()
    }

    /// What the sweep (every 250 ms) and every heartbeat ask, and the retention pass's
    /// delete by age, go through the indexes of migration v2 rather than scanning tables
    /// that grow with history. The live-streams query is GRDB's own SQL with its bound
    /// arguments, as Reconciliation runs it.
    @Test func theSweepsQueriesUseTheirIndexes() async throws {
        let fixture = try await CoordinatorFixture()
        let plans = try await fixture.store.read { db -> [String] in
            func plan(_ sql: String, _ arguments: StatementArguments = StatementArguments()) throws -> String {
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments).map { row -> String in
                    let detail: String? = row["detail"]
                    return detail ?? ""
                }.joined(separator: "; ")
            }
            let liveOfIngest = try StreamRecord.all().live().ingestedBy("ingest-1").makePreparedRequest(db).statement
            return try [
                plan(Placement.unplacedStreamsSQL),
                plan(liveOfIngest.sql, liveOfIngest.arguments),
                plan("SELECT id FROM events WHERE time < ? ORDER BY time LIMIT 10", [Date()]),
            ]
        }
        #expect(plans[0].contains("renditions_active_state"), "\(plans[0])")
        #expect(plans[1].contains("streams_live_ingest"), "\(plans[1])")
        #expect(plans[2].contains("events_time"), "\(plans[2])")
        try await fixture.close()
    }

    @Test func anUnknownRoleIsRefusedBySQLite() async throws {
        let fixture = try await CoordinatorFixture()
        await #expect(throws: DatabaseError.self) {
            try await fixture.store.write { db in
                try db.execute(sql: "INSERT INTO nodes (id, role, advertise_host, state, registered_at, last_heartbeat_at) VALUES ('x', 'wizard', 'h', 'alive', '2026-01-01', '2026-01-01')")
            }
        }
        try await fixture.close()
    }

    /// A file written before edges existed (v2) upgrades in place: its nodes and the streams
    /// that point at them survive, an edge can register, and the foreign keys still hold.
    @Test func aV2FileUpgradesToAcceptEdges() async throws {
        let (store, directory) = try await Self.upgraded(from: "v2-indexes-for-sweep-and-retention", rows: [
            "INSERT INTO nodes (id, role, advertise_host, state, registered_at, last_heartbeat_at) VALUES ('ingest-1', 'ingest', 'h', 'alive', '2026-01-01', '2026-01-01')",
            "INSERT INTO streams (app, name, state, ingest_node, container, started_at) VALUES ('live', 'cam', 'live', 'ingest-1', 'flv', '2026-01-01')",
        ])
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(try await store.appliedMigrations() == Self.migrations)
        try await store.write { db in
            try db.execute(sql: "INSERT INTO nodes (id, role, advertise_host, state, registered_at, last_heartbeat_at) VALUES ('edge-1', 'edge', 'h', 'alive', '2026-01-01', '2026-01-01')")
        }
        let (nodes, streams) = try await store.read { db in
            (try String.fetchAll(db, sql: "SELECT id FROM nodes ORDER BY id"), try String.fetchAll(db, sql: "SELECT ingest_node FROM streams"))
        }
        #expect(nodes == ["edge-1", "ingest-1"])
        #expect(streams == ["ingest-1"])
        await #expect(throws: DatabaseError.self) {
            try await store.write { db in
                try db.execute(sql: "INSERT INTO streams (app, name, state, ingest_node, container, started_at) VALUES ('live', 'x', 'live', 'nobody', 'flv', '2026-01-01')")
            }
        }
        try await store.close()
    }

    /// A v6 file upgrades to nodes that may have left: its nodes keep their columns (a
    /// draining one still drains), the streams and renditions that point at them survive,
    /// and SQLite takes `left` and still refuses a state it does not know.
    @Test func aV6FileUpgradesToNodesThatLeft() async throws {
        let (store, directory) = try await Self.upgraded(from: "v6-multitrack", rows: [
            "INSERT INTO nodes (id, role, advertise_host, state, load, registered_at, last_heartbeat_at, draining) VALUES ('transcode-1', 'transcode', 'h', 'alive', 2.5, '2026-01-01', '2026-01-02', 1)",
            "INSERT INTO nodes (id, role, advertise_host, state, registered_at, last_heartbeat_at) VALUES ('ingest-1', 'ingest', 'h', 'dead', '2026-01-01', '2026-01-01')",
            "INSERT INTO streams (app, name, state, ingest_node, container, started_at) VALUES ('live', 'cam', 'live', 'ingest-1', 'flv', '2026-01-01')",
            "INSERT INTO renditions (stream_id, rung, width, height, bit_rate, transcoder_node, state) VALUES (1, '360p', 640, 360, 800000, 'transcode-1', 'running')",
        ])
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(try await store.appliedMigrations() == Self.migrations)
        let nodes = try await store.read { db in try NodeRecord.order(NodeRecord.Columns.id).fetchAll(db) }
        #expect(nodes.map(\.id) == ["ingest-1", "transcode-1"])
        #expect(nodes.map(\.state) == [.dead, .alive])
        #expect(nodes.last?.draining == true)
        #expect(nodes.last?.load == 2.5)
        try await store.write { db in
            try db.execute(sql: "UPDATE nodes SET state = 'left' WHERE id = 'transcode-1'")
        }
        let (streams, renditions) = try await store.read { db in
            (try String.fetchAll(db, sql: "SELECT ingest_node FROM streams"), try String.fetchAll(db, sql: "SELECT transcoder_node FROM renditions"))
        }
        #expect(streams == ["ingest-1"])
        #expect(renditions == ["transcode-1"])
        await #expect(throws: DatabaseError.self) {
            try await store.write { db in try db.execute(sql: "UPDATE nodes SET state = 'resting' WHERE id = 'ingest-1'") }
        }
        await #expect(throws: DatabaseError.self) {
            try await store.write { db in try db.execute(sql: "DELETE FROM nodes WHERE id = 'transcode-1'") }
        }
        try await store.close()
    }

    /// A file in a directory of its own, migrated up to `migration` and given `rows`, then
    /// opened as the coordinator opens it (every later migration applied). The caller
    /// removes the directory.
    static func upgraded(from migration: String, rows: [String]) async throws -> (CoordinatorStore, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("estuary-upgrade-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("estuary.sqlite").path
        let queue = try DatabaseQueue(path: path)
        try CoordinatorMigrations.migrator.migrate(queue, upTo: migration)
        try await queue.write { db in
            for row in rows { try db.execute(sql: row) }
        }
        try queue.close()
        return (try await CoordinatorStore.open(at: path), directory)
    }
}
