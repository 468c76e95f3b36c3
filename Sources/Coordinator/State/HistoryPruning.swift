import Foundation
import GRDB

/// The retention pass inside one write transaction: deletes the history older than
/// `CoordinatorRetention` keeps, children before parents, so that every foreign key of
/// the schema holds without relying on a cascade.
///
/// The foreign keys (migration v1): `renditions.stream_id` cascades from `streams`, but
/// renditions are deleted explicitly first, so that they are counted and nothing depends
/// on `PRAGMA foreign_keys`; `streams.ingest_node` and `renditions.transcoder_node`
/// reference `nodes` with no delete action, so a dead node goes only once no stream (live
/// or ended) and no rendition names it. Sessions are pruned before nodes in the same
/// pass, so a node whose last sessions just aged out goes with them.
///
/// Every statement deletes at most `maxRowsPerPass` rows, through an `id IN (SELECT …
/// LIMIT n)` subquery (SQLite's `DELETE … LIMIT` is a compile-time option).
enum HistoryPruning {
    static func prune(_ db: Database, now: Date, retention: CoordinatorRetention) throws -> PruneCounts {
        let limit = max(1, retention.maxRowsPerPass)
        // Runs a limited DELETE and returns the rows it deleted.
        func delete(_ sql: String, _ arguments: StatementArguments) throws -> Int {
            try db.execute(sql: sql, arguments: arguments)
            return db.changesCount
        }

        // Ended sessions, their renditions first. Both statements select the same ids: the
        // streams are not touched in between, and the order is fixed.
        let sessionsBefore = now.addingTimeInterval(-retention.endedStreams.timeInterval)
        let oldSessions = """
            SELECT id FROM streams WHERE state = 'ended' AND COALESCE(ended_at, started_at) < ? ORDER BY id LIMIT ?
            """
        let renditions = try delete("DELETE FROM renditions WHERE stream_id IN (\(oldSessions))", [sessionsBefore, limit])
        let streams = try delete("DELETE FROM streams WHERE id IN (\(oldSessions))", [sessionsBefore, limit])

        // Dead nodes, and nodes that left, that nothing refers to any more.
        let nodesBefore = now.addingTimeInterval(-retention.deadNodes.timeInterval)
        let nodes = try delete(
            """
            DELETE FROM nodes WHERE id IN (
                SELECT n.id FROM nodes AS n
                WHERE n.state IN ('dead', 'left') AND n.last_heartbeat_at < ?
                    AND NOT EXISTS (SELECT 1 FROM streams AS s WHERE s.ingest_node = n.id)
                    AND NOT EXISTS (SELECT 1 FROM renditions AS r WHERE r.transcoder_node = n.id)
                ORDER BY n.id LIMIT ?)
            """,
            [nodesBefore, limit]
        )

        let keysBefore = now.addingTimeInterval(-retention.revokedKeys.timeInterval)
        let streamKeys = try delete(
            """
            DELETE FROM stream_keys WHERE id IN (
                SELECT id FROM stream_keys WHERE revoked_at IS NOT NULL AND revoked_at < ? ORDER BY id LIMIT ?)
            """,
            [keysBefore, limit]
        )

        // Events: by age (through the index on `time`), then beyond the row cap, oldest
        // (smallest id: the order they were written in) first.
        let eventsBefore = now.addingTimeInterval(-retention.events.timeInterval)
        let agedEvents = try delete(
            "DELETE FROM events WHERE id IN (SELECT id FROM events WHERE time < ? ORDER BY time LIMIT ?)",
            [eventsBefore, limit]
        )
        let excessEvents = try delete(
            """
            DELETE FROM events WHERE id IN (
                SELECT id FROM events WHERE id <= (SELECT id FROM events ORDER BY id DESC LIMIT 1 OFFSET ?)
                ORDER BY id LIMIT ?)
            """,
            [max(0, retention.maxEvents), limit]
        )

        var counts = PruneCounts()
        counts.events = agedEvents + excessEvents
        counts.streams = streams
        counts.renditions = renditions
        counts.nodes = nodes
        counts.streamKeys = streamKeys
        // A full batch may have left rows behind (renditions follow their streams' batch).
        counts.isPartial = [streams, nodes, streamKeys, agedEvents, excessEvents].contains { $0 >= limit }
        return counts
    }
}
