import Cluster
import Foundation
import GRDB

/// Transcode placement inside one write transaction: pure functions of the database, so
/// that a placement and the change that caused it commit together.
enum Placement {
    /// The alive transcoder with the least reported load (nodes report the rungs they
    /// encode plus the publishers they hold); ties go to the one assigned fewer rungs (two
    /// streams starting within one heartbeat would otherwise pile onto the same idle node;
    /// a job of four rungs costs about four times one of a single rung), then to the
    /// smaller id (deterministic).
    static func leastLoadedTranscoder(_ db: Database, excluding excluded: Set<String> = []) throws -> NodeRecord? {
        let candidates = try NodeRecord.all().aliveTranscoders().fetchAll(db).filter { !excluded.contains($0.id) }
        guard !candidates.isEmpty else { return nil }
        let rungs = try rungCounts(db)
        return candidates.min { left, right in
            (left.load, rungs[left.id, default: 0], left.id) < (right.load, rungs[right.id, default: 0], right.id)
        }
    }

    /// Active renditions (rungs) per transcoder.
    static func rungCounts(_ db: Database) throws -> [String: Int] {
        try perTranscoder(db, count: "COUNT(*)")
    }

    /// Active jobs (streams with unended renditions) per transcoder.
    static func jobCounts(_ db: Database) throws -> [String: Int] {
        try perTranscoder(db, count: "COUNT(DISTINCT stream_id)")
    }

    /// `count` (an SQL aggregate over active renditions) per transcoder.
    private static func perTranscoder(_ db: Database, count: String) throws -> [String: Int] {
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT transcoder_node, \(count) AS count FROM renditions
                WHERE state != 'ended' AND state != 'skipped' AND transcoder_node IS NOT NULL GROUP BY transcoder_node
                """
        )
        var counts: [String: Int] = [:]
        for row in rows {
            if let node: String = row["transcoder_node"] {
                counts[node] = row["count"]
            }
        }
        return counts
    }

    /// Creates the renditions of a newly live stream, all on one transcoder (or unplaced).
    @discardableResult
    static func placeNewJob(_ db: Database, streamID: Int64, rungs: [RungSpec]) throws -> String? {
        guard !rungs.isEmpty else { return nil }
        let transcoder = try leastLoadedTranscoder(db)?.id
        for rung in rungs {
            var rendition = RenditionRecord(streamID: streamID, rung: rung, transcoderNode: transcoder)
            try rendition.insert(db)
        }
        return transcoder
    }

    /// Moves every active job of `nodeID` to the least-loaded other transcoder. With
    /// `handover` (a drain: the node still encodes), a job with nowhere to go stays, and
    /// a moved one names the node it takes over from.
    static func moveJobs(_ db: Database, off nodeID: String, handover: Bool = false) throws -> [TranscodeMove] {
        let renditions = try RenditionRecord.all().on(transcoder: nodeID).active().fetchAll(db)
        let streamIDs = Array(Set(renditions.map(\.streamID))).sorted()
        var moves: [TranscodeMove] = []
        for streamID in streamIDs {
            guard let stream = try StreamRecord.fetchOne(db, key: streamID) else { continue }
            let target = try leastLoadedTranscoder(db, excluding: [nodeID])?.id
            if handover, target == nil { continue }
            try assign(db, streamID: streamID, to: target, handoverFrom: handover ? nodeID : nil)
            moves.append(TranscodeMove(app: stream.app, name: stream.name, from: nodeID, to: target))
        }
        return moves
    }

    /// The streams with unplaced renditions. `state != 'ended'` is implied by the other
    /// term, but SQLite uses the partial index `renditions_active_state` only for a query
    /// that spells its condition out; without it every sweep scans all renditions ever.
    static let unplacedStreamsSQL = "SELECT DISTINCT stream_id FROM renditions WHERE state != 'ended' AND state = 'unplaced' ORDER BY stream_id"

    /// Places unplaced jobs of live streams, now that a transcoder may be available.
    static func placeUnplacedJobs(_ db: Database) throws -> [CoordinatorState.StreamKey: String] {
        let streamIDs = try Int64.fetchAll(db, sql: unplacedStreamsSQL)
        var placed: [CoordinatorState.StreamKey: String] = [:]
        for streamID in streamIDs {
            guard let target = try leastLoadedTranscoder(db)?.id,
                  let stream = try StreamRecord.fetchOne(db, key: streamID)
            else { break }
            try assign(db, streamID: streamID, to: target)
            placed[CoordinatorState.StreamKey(app: stream.app, name: stream.name)] = target
        }
        return placed
    }

    /// Points every active rendition of a stream at `node` (nil: unplaced), taking over
    /// from `handoverFrom` (a draining transcoder) if given.
    static func assign(_ db: Database, streamID: Int64, to node: String?, handoverFrom: String? = nil) throws {
        try RenditionRecord.all().ofStream(streamID).active().updateAll(
            db,
            RenditionRecord.Columns.transcoderNode.set(to: node),
            RenditionRecord.Columns.state.set(to: (node == nil ? RenditionState.unplaced : .assigned).rawValue),
            RenditionRecord.Columns.handoverFrom.set(to: handoverFrom)
        )
    }

    /// The job of a live stream as its transcoder receives it.
    static func assignment(_ db: Database, stream: StreamRecord) throws -> TranscodeAssignment? {
        guard let streamID = stream.id else { return nil }
        let rungs = try RenditionRecord.all().ofStream(streamID).active().order(Column("id")).fetchAll(db)
        guard !rungs.isEmpty else { return nil }
        return TranscodeAssignment(
            app: stream.app, name: stream.name, ingestNode: stream.ingestNode, rungs: rungs.map(\.spec),
            takesOverFrom: rungs.lazy.compactMap(\.handoverFrom).first
        )
    }
}
