import Cluster
import Foundation
import GRDB
import Media

/// Brings the database in line with what a node reports (in `register` and every
/// heartbeat), inside the same write transaction, and derives the node's instructions.
///
/// The node is the truth about itself: streams it publishes are live on it, streams it no
/// longer publishes have ended, and the transcode jobs it runs are compared with the ones
/// assigned to it. This is what reconciles a coordinator restarted from its file (or a
/// node back from a partition) with the cluster as it is.
enum Reconciliation {
    static func reconcile(
        _ db: Database, node: NodeRecord, reports: [StreamReport], time: Date, ladders: [String: [RungSpec]], endGrace: TimeInterval
    ) throws -> [NodeInstruction] {
        try reconcilePublished(db, node: node, reports: reports, time: time, ladders: ladders, endGrace: endGrace)
        guard node.role.transcodes else { return [] }
        return try transcodeInstructions(db, node: node, reports: reports)
    }

    /// Streams the node publishes become (or stay) live on it, with their latest facts;
    /// live streams it ingests but no longer reports end. A stream that started less than
    /// `endGrace` ago is spared: the heartbeat may have been sent before `streamStarted`.
    static func reconcilePublished(
        _ db: Database, node: NodeRecord, reports: [StreamReport], time: Date, ladders: [String: [RungSpec]], endGrace: TimeInterval
    ) throws {
        var reported: Set<String> = []
        for report in reports {
            guard let facts = report.publishing, StreamPath.isValidComponent(report.app), StreamPath.isValidComponent(report.name) else {
                continue
            }
            reported.insert("\(report.app)/\(report.name)")
            if let stream = try StreamRecord.all().live().path(app: report.app, name: report.name).fetchOne(db) {
                if stream.ingestNode == node.id {
                    var stream = stream
                    let bytes = report.bytes ?? stream.bytes
                    if stream.facts != facts || stream.bytes != bytes {
                        stream.facts = facts
                        stream.bytes = bytes
                        try stream.update(db)
                    }
                    continue
                }
                // Another ingest holds it in our records; the one reporting it is alive
                // now, so the other session is over (a takeover during a partition).
                try end(db, stream: stream, time: time, reason: "taken over by \(node.id)")
            }
            try start(
                db, app: report.app, name: report.name, ingestNode: node.id, facts: facts, bytes: report.bytes ?? 0, time: time,
                rungs: ladders[report.app] ?? [], detail: "reported by \(node.id)"
            )
        }
        let spareAfter = time.addingTimeInterval(-endGrace)
        for stream in try StreamRecord.all().live().ingestedBy(node.id).fetchAll(db)
        where !reported.contains("\(stream.app)/\(stream.name)") && stream.startedAt < spareAfter {
            try end(db, stream: stream, time: time, reason: "no longer reported by \(node.id)")
        }
    }

    /// `transcode` for each job assigned to the node that it does not report running,
    /// `stopTranscode` for each job it runs that is not its own; reported jobs become
    /// `running`.
    static func transcodeInstructions(_ db: Database, node: NodeRecord, reports: [StreamReport]) throws -> [NodeInstruction] {
        var running: Set<String> = []
        var instructions: [NodeInstruction] = []
        let assignedStreamIDs = try Int64.fetchAll(
            db, sql: "SELECT DISTINCT stream_id FROM renditions WHERE transcoder_node = ? AND state != 'ended' ORDER BY stream_id",
            arguments: [node.id]
        )
        var assigned: [String: StreamRecord] = [:]
        for streamID in assignedStreamIDs {
            if let stream = try StreamRecord.fetchOne(db, key: streamID) {
                assigned["\(stream.app)/\(stream.name)"] = stream
            }
        }
        for report in reports where report.rungs != nil {
            let key = "\(report.app)/\(report.name)"
            running.insert(key)
            if let stream = assigned[key], let streamID = stream.id {
                // Running here: any handover it was moved with is over.
                try RenditionRecord.all().ofStream(streamID).filter(RenditionRecord.Columns.handoverFrom != nil)
                    .updateAll(db, RenditionRecord.Columns.handoverFrom.set(to: nil))
                if let produced = report.produced {
                    // What the transcoder encodes now, at its real size; the ladder's other
                    // rungs (above the source) are skipped.
                    let sizes = Dictionary(produced.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
                    for var rendition in try RenditionRecord.all().ofStream(streamID).active().filter(RenditionRecord.Columns.transcoderNode == node.id).fetchAll(db) {
                        let state: RenditionState = sizes[rendition.rung] == nil ? .skipped : .running
                        let width = sizes[rendition.rung]?.width ?? rendition.width
                        guard rendition.state != state || rendition.width != width else { continue }
                        rendition.state = state
                        rendition.width = width
                        try rendition.update(db)
                    }
                } else {
                    try RenditionRecord.all().ofStream(streamID).filter(RenditionRecord.Columns.state == RenditionState.assigned.rawValue)
                        .updateAll(db, RenditionRecord.Columns.state.set(to: RenditionState.running.rawValue))
                }
            } else if !node.draining {
                // A draining node stops a moved job itself, once the new transcoder took over.
                instructions.append(.stopTranscode(app: report.app, name: report.name))
            }
        }
        for (key, stream) in assigned.sorted(by: { $0.key < $1.key }) where !running.contains(key) {
            if let assignment = try Placement.assignment(db, stream: stream) {
                instructions.append(.transcode(assignment))
            }
        }
        return instructions
    }

    /// A new live session, its transcode job placed when its app has a ladder.
    static func start(
        _ db: Database, app: String, name: String, ingestNode: String, facts: StreamFacts, bytes: Int64, time: Date, rungs: [RungSpec], detail: String
    ) throws {
        var stream = StreamRecord(app: app, name: name, ingestNode: ingestNode, facts: facts, startedAt: time)
        stream.bytes = bytes
        try stream.insert(db)
        try EventRecord.record(db, time: time, kind: "stream.started", subject: "\(app)/\(name)", detail: "on \(ingestNode), \(detail)")
        if let streamID = stream.id, !rungs.isEmpty {
            let transcoder = try Placement.placeNewJob(db, streamID: streamID, rungs: rungs)
            try EventRecord.record(db, time: time, kind: "transcode.placed", subject: "\(app)/\(name)", detail: transcoder ?? "unplaced")
        }
    }

    /// Ends a live session and its renditions.
    static func end(_ db: Database, stream: StreamRecord, time: Date, reason: String) throws {
        var stream = stream
        stream.state = .ended
        stream.endedAt = time
        try stream.update(db)
        if let streamID = stream.id {
            try RenditionRecord.all().ofStream(streamID).updateAll(db, RenditionRecord.Columns.state.set(to: RenditionState.ended.rawValue))
        }
        try EventRecord.record(db, time: time, kind: "stream.ended", subject: "\(stream.app)/\(stream.name)", detail: reason)
    }

    /// Ends every live stream ingested by a dead node.
    static func endStreams(_ db: Database, ingestedBy nodeID: String, time: Date, reason: String) throws {
        for stream in try StreamRecord.all().live().ingestedBy(nodeID).fetchAll(db) {
            try end(db, stream: stream, time: time, reason: reason)
        }
    }
}
