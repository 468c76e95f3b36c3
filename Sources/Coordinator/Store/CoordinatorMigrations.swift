import GRDB

/// The coordinator's schema, as named migrations. A shipped migration is never edited:
/// changes are new migrations, so every coordinator file upgrades the same way.
///
/// Table and column names are literals (not derived from the records' coding keys), so a
/// renamed Swift property can never silently change what an old migration means.
enum CoordinatorMigrations {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-nodes-streams-renditions-keys-events") { db in
            try db.create(table: "nodes") { table in
                table.primaryKey("id", .text)
                table.column("role", .text).notNull()
                    .check(sql: "role IN ('ingest', 'transcode', 'relay', 'coordinator', 'all')")
                table.column("advertise_host", .text).notNull()
                table.column("state", .text).notNull().check(sql: "state IN ('alive', 'dead')")
                table.column("load", .double).notNull().defaults(to: 0)
                table.column("registered_at", .datetime).notNull()
                table.column("last_heartbeat_at", .datetime).notNull()
            }
            try db.create(table: "streams") { table in
                table.autoIncrementedPrimaryKey("id")
                table.column("app", .text).notNull()
                table.column("name", .text).notNull()
                table.column("state", .text).notNull().check(sql: "state IN ('live', 'ended')")
                table.column("ingest_node", .text).notNull().references("nodes")
                table.column("container", .text).notNull()
                table.column("video_codec", .text)
                table.column("video_profile", .text)
                table.column("width", .integer)
                table.column("height", .integer)
                table.column("frame_rate", .double)
                table.column("video_bit_rate", .integer)
                table.column("audio_codec", .text)
                table.column("audio_bit_rate", .integer)
                table.column("audio_sample_rate", .integer)
                table.column("audio_channels", .integer)
                table.column("started_at", .datetime).notNull()
                table.column("ended_at", .datetime)
                table.column("bytes", .integer).notNull().defaults(to: 0)
            }
            // At most one live session per app/name; ended sessions stay as history.
            try db.create(
                index: "streams_live_path", on: "streams", columns: ["app", "name"],
                options: .unique, condition: Column("state") == "live"
            )
            try db.create(table: "renditions") { table in
                table.autoIncrementedPrimaryKey("id")
                table.column("stream_id", .integer).notNull().references("streams", onDelete: .cascade)
                table.column("rung", .text).notNull()
                table.column("width", .integer).notNull()
                table.column("height", .integer).notNull()
                table.column("bit_rate", .integer).notNull()
                table.column("transcoder_node", .text).references("nodes")
                table.column("state", .text).notNull().check(sql: "state IN ('unplaced', 'assigned', 'running', 'ended')")
                table.uniqueKey(["stream_id", "rung"])
            }
            try db.create(index: "renditions_transcoder", on: "renditions", columns: ["transcoder_node"])
            try db.create(table: "stream_keys") { table in
                table.autoIncrementedPrimaryKey("id")
                table.column("app", .text).notNull()
                table.column("name", .text).notNull()
                // SHA-256(salt ‖ key); the key itself is never stored.
                table.column("salt", .blob).notNull()
                table.column("key_hash", .blob).notNull()
                table.column("created_at", .datetime).notNull()
                table.column("revoked_at", .datetime)
            }
            try db.create(index: "stream_keys_path", on: "stream_keys", columns: ["app", "name"])
            try db.create(table: "events") { table in
                table.autoIncrementedPrimaryKey("id")
                table.column("time", .datetime).notNull()
                table.column("kind", .text).notNull()
                table.column("subject", .text).notNull()
                table.column("detail", .text).notNull().defaults(to: "")
            }
        }
        // Indexes for what the sweep (every 250 ms) and heartbeats (every node, every
        // second) ask, which otherwise scan whole tables that grow with history.
        migrator.registerMigration("v2-indexes-for-sweep-and-retention") { db in
            // Jobs to place and rungs per transcoder look at active renditions only; the
            // ended ones (all of history) stay out of the index. SQLite uses a partial
            // index only for a query that repeats its condition (`Placement`'s queries do).
            try db.create(
                index: "renditions_active_state", on: "renditions", columns: ["state", "stream_id"],
                condition: Column("state") != "ended"
            )
            // The live streams of one ingest: reconciled at each of its heartbeats, ended
            // at its death.
            try db.create(
                index: "streams_live_ingest", on: "streams", columns: ["ingest_node"],
                condition: Column("state") == "live"
            )
            // The retention pass deletes events by age.
            try db.create(index: "events_time", on: "events", columns: ["time"])
        }
        // Edges register once they join a cluster. SQLite cannot change a CHECK in place:
        // the table is rebuilt under a new name and renamed (foreign keys are checked at the
        // end of the migration, so `streams` and `renditions` keep pointing at `nodes`).
        migrator.registerMigration("v3-edge-role") { db in
            try db.create(table: "nodes_v3") { table in
                table.primaryKey("id", .text)
                table.column("role", .text).notNull()
                    .check(sql: "role IN ('ingest', 'transcode', 'relay', 'coordinator', 'edge', 'all')")
                table.column("advertise_host", .text).notNull()
                table.column("state", .text).notNull().check(sql: "state IN ('alive', 'dead')")
                table.column("load", .double).notNull().defaults(to: 0)
                table.column("registered_at", .datetime).notNull()
                table.column("last_heartbeat_at", .datetime).notNull()
            }
            let columns = "id, role, advertise_host, state, load, registered_at, last_heartbeat_at"
            try db.execute(sql: "INSERT INTO nodes_v3 (\(columns)) SELECT \(columns) FROM nodes")
            try db.drop(table: "nodes")
            try db.rename(table: "nodes_v3", to: "nodes")
        }
        // A ladder's rungs above the source are `skipped`, not `running` (issue 23): the
        // state's CHECK grows, so the table is rebuilt as in v3.
        migrator.registerMigration("v4-skipped-renditions") { db in
            try db.create(table: "renditions_v4") { table in
                table.autoIncrementedPrimaryKey("id")
                table.column("stream_id", .integer).notNull().references("streams", onDelete: .cascade)
                table.column("rung", .text).notNull()
                table.column("width", .integer).notNull()
                table.column("height", .integer).notNull()
                table.column("bit_rate", .integer).notNull()
                table.column("transcoder_node", .text).references("nodes")
                table.column("state", .text).notNull().check(sql: "state IN ('unplaced', 'assigned', 'running', 'skipped', 'ended')")
                table.uniqueKey(["stream_id", "rung"])
            }
            let columns = "id, stream_id, rung, width, height, bit_rate, transcoder_node, state"
            try db.execute(sql: "INSERT INTO renditions_v4 (\(columns)) SELECT \(columns) FROM renditions")
            try db.drop(table: "renditions")
            try db.rename(table: "renditions_v4", to: "renditions")
            try db.create(index: "renditions_transcoder", on: "renditions", columns: ["transcoder_node"])
            try db.create(
                index: "renditions_active_state", on: "renditions", columns: ["state", "stream_id"],
                condition: Column("state") != "ended"
            )
        }
        migrator.registerMigration("v5-drain-handover") { db in
            // A draining transcoder takes no new jobs; a job moved off it names it, so that
            // the new transcoder takes over at a keyframe instead of publishing beside it.
            try db.alter(table: "nodes") { table in
                table.add(column: "draining", .boolean).notNull().defaults(to: false)
            }
            try db.alter(table: "renditions") { table in
                table.add(column: "handover_from", .text)
            }
        }
        migrator.registerMigration("v6-multitrack") { db in
            // A multitrack publisher's encoder-made renditions, as its ingest reports them.
            try db.alter(table: "streams") { table in
                table.add(column: "tracks", .text)
            }
        }
        // A node that says it leaves is `left`, not `dead` (a rolling restart is no death):
        // the state's CHECK grows, so the table is rebuilt as in v3.
        migrator.registerMigration("v7-left-nodes") { db in
            try db.create(table: "nodes_v7") { table in
                table.primaryKey("id", .text)
                table.column("role", .text).notNull()
                    .check(sql: "role IN ('ingest', 'transcode', 'relay', 'coordinator', 'edge', 'all')")
                table.column("advertise_host", .text).notNull()
                table.column("state", .text).notNull().check(sql: "state IN ('alive', 'dead', 'left')")
                table.column("load", .double).notNull().defaults(to: 0)
                table.column("registered_at", .datetime).notNull()
                table.column("last_heartbeat_at", .datetime).notNull()
                table.column("draining", .boolean).notNull().defaults(to: false)
            }
            let columns = "id, role, advertise_host, state, load, registered_at, last_heartbeat_at, draining"
            try db.execute(sql: "INSERT INTO nodes_v7 (\(columns)) SELECT \(columns) FROM nodes")
            try db.drop(table: "nodes")
            try db.rename(table: "nodes_v7", to: "nodes")
        }
        return migrator
    }
}
