import Cluster
import Foundation
import GRDB
import Logging
import Metrics
import Media

extension CoordinatorState {
    /// An ingest accepted a publisher: the stream is live on it (ending a session another
    /// ingest still held in our records), and its transcode job is placed when its app has
    /// a ladder.
    public func streamStarted(_ start: StreamStart) async throws {
        try Self.validate(app: start.app, name: start.name)
        let time = now()
        let rungs = configuration.ladders[start.app] ?? []
        let started = try await store.write { db in
            guard try NodeRecord.fetchOne(db, key: start.ingestNode) != nil else {
                throw CoordinatorError.unknownNode(start.ingestNode)
            }
            if let current = try StreamRecord.all().live().path(app: start.app, name: start.name).fetchOne(db) {
                // The same ingest again: its publisher reconnected within the grace period,
                // and viewers never saw the stream end. The session (and its job) go on.
                if current.ingestNode == start.ingestNode { return false }
                try Reconciliation.end(db, stream: current, time: time, reason: "republished on \(start.ingestNode)")
            }
            try Reconciliation.start(
                db, app: start.app, name: start.name, ingestNode: start.ingestNode, facts: start.facts, bytes: 0, time: time,
                rungs: rungs, detail: "published"
            )
            return true
        }
        if started {
            pushJobs(of: [StreamKey(app: start.app, name: start.name)])
        }
    }

    /// The publisher of `app/name` on `ingestNode` left for good. Ending a stream that is
    /// not live is a no-op (the notice may race with the ingest's death or a kick).
    public func streamEnded(app: String, name: String, ingestNode: String) async throws {
        try Self.validate(app: app, name: name)
        let time = now()
        try await store.write { db in
            guard let stream = try StreamRecord.all().live().path(app: app, name: name).fetchOne(db) else { return }
            guard stream.ingestNode == ingestNode else {
                throw CoordinatorError.notTheIngest(app: app, name: name, nodeID: ingestNode)
            }
            try Reconciliation.end(db, stream: stream, time: time, reason: "unpublished")
        }
        viewers[StreamKey(app: app, name: name)] = nil
    }

    /// Where a live stream lives: its ingest node and host, and each rendition's transcoder.
    public func lookup(app: String, name: String) async throws -> StreamLocation? {
        try Self.validate(app: app, name: name)
        return try await store.read { db in
            guard let stream = try StreamRecord.all().live().path(app: app, name: name).fetchOne(db),
                  let streamID = stream.id,
                  let ingest = try NodeRecord.fetchOne(db, key: stream.ingestNode)
            else { return nil }
            // Rungs the transcoder skips (above the source) are no rendition a relay can open.
            let renditions = try RenditionRecord.all().ofStream(streamID).order(Column("id")).fetchAll(db)
                .filter { $0.state != .skipped }
            return StreamLocation(
                app: app, name: name, ingestNode: ingest.id, ingestHost: ingest.advertiseHost,
                renditions: renditions.map { RenditionLocation(rung: $0.spec, transcoderNode: $0.transcoderNode, state: $0.state) },
                tracks: stream.facts.tracks
            )
        }
    }

    /// An operator's kick of the publisher of `app/name`: the ingest is called at once,
    /// and if it cannot be reached the kick waits for its next heartbeat. Returns false
    /// when the stream is not live.
    public func kick(app: String, name: String) async throws -> Bool {
        try Self.validate(app: app, name: name)
        let time = now()
        let session: (ingest: String, id: Int64?)? = try await store.write { db in
            guard let stream = try StreamRecord.all().live().path(app: app, name: name).fetchOne(db) else { return nil }
            try EventRecord.record(db, time: time, kind: "stream.kicked", subject: "\(app)/\(name)", detail: "publisher on \(stream.ingestNode)")
            return (stream.ingestNode, stream.id)
        }
        guard let session else { return false }
        if let dispatch {
            do {
                if try await !dispatch.kick(app: app, name: name, on: session.ingest) {
                    logger.notice("Kick of \(app)/\(name): no publisher attached on \(session.ingest) right now")
                }
                return true
            } catch {
                logger.notice("Kick of \(app)/\(name) goes with the next heartbeat of \(session.ingest): \(error)")
            }
            // The call waited: queue the kick only for the same session on a node still
            // alive, never for a session (or a node id) that came after it.
            let current = try await store.read { db in
                let stream = try StreamRecord.all().live().path(app: app, name: name).fetchOne(db)
                let node = try NodeRecord.fetchOne(db, key: session.ingest)
                return stream?.id == session.id && node?.state == .alive
            }
            guard current else { return true }
        }
        pendingKicks[session.ingest, default: []].insert(StreamKey(app: app, name: name))
        return true
    }

    /// What `nodeID` carries right now, asked of the node itself (not its last heartbeat).
    /// nil when the node is unknown; throws when it does not answer.
    public func liveStreams(onNode nodeID: String) async throws -> [StreamReport]? {
        guard let node = try await store.read({ db in try NodeRecord.fetchOne(db, key: nodeID) }) else { return nil }
        guard let dispatch else { throw CoordinatorError.nodeUnreachable(nodeID) }
        return try await dispatch.streams(of: nodeID, role: node.role)
    }

    /// Pushes the current jobs of `streams` to their transcoders, without waiting for the
    /// answers. A push that fails changes nothing: the job goes out with the transcoder's
    /// next heartbeat reply, as it always does.
    func pushJobs(of streams: [StreamKey]) {
        guard !streams.isEmpty else { return }
        pushes?.yield(streams)
    }

    /// Reads each stream's job and its transcoder, and calls it.
    static func push(_ streams: [StreamKey], store: CoordinatorStore, dispatch: NodeDispatch, logger: Logger) async {
        let jobs: [(node: String, assignment: TranscodeAssignment)]
        do {
            jobs = try await store.read { db in
                try streams.compactMap { key -> (node: String, assignment: TranscodeAssignment)? in
                    guard let stream = try StreamRecord.all().live().path(app: key.app, name: key.name).fetchOne(db),
                          let streamID = stream.id,
                          let node = try RenditionRecord.all().ofStream(streamID).active().fetchOne(db)?.transcoderNode,
                          let assignment = try Placement.assignment(db, stream: stream)
                    else { return nil }
                    return (node, assignment)
                }
            }
        } catch {
            logger.warning("Cannot read the jobs to push: \(error)")
            return
        }
        for job in jobs {
            do {
                try await dispatch.assign(job.assignment, to: job.node)
            } catch {
                logger.notice("Job \(job.assignment.app)/\(job.assignment.name) goes with the next heartbeat of \(job.node): \(error)")
            }
        }
    }

    /// Live streams with their facts, renditions, viewers per relay and uptime.
    public func liveStreams() async throws -> [StreamSummary] {
        let time = now()
        let rows = try await store.read { db in
            try StreamRecord.all().live().order(StreamRecord.Columns.app, StreamRecord.Columns.name).fetchAll(db).map { stream in
                (stream, try RenditionRecord.all().ofStream(stream.id ?? -1).order(Column("id")).fetchAll(db))
            }
        }
        return rows.map { stream, renditions in
            StreamSummary(
                stream, renditions: renditions, viewers: viewers[StreamKey(app: stream.app, name: stream.name)] ?? [:], now: time
            )
        }
    }

    /// The latest audit events, newest first.
    public func events(limit: Int = 100) async throws -> [EventSummary] {
        try await store.read { db in
            try EventRecord.order(EventRecord.Columns.id.desc).limit(max(0, limit)).fetchAll(db).map(EventSummary.init)
        }
    }

    static func validate(app: String, name: String) throws {
        guard StreamPath.isValidComponent(app), StreamPath.isValidComponent(name) else {
            throw CoordinatorError.invalidStreamPath(app: String(app.prefix(StreamPath.maxComponentLength)), name: String(name.prefix(StreamPath.maxComponentLength)))
        }
    }

    /// The cluster's one-publisher rule as a lock (`PublishClaims`): nil when ingest `node`
    /// may admit a publisher of `app/name` now (it holds the claim for 3 s), else the ingest
    /// that claimed it first. `handedOver`: the ingest that held the stream gave it up (it
    /// answered the bus question yes), and the claim takes it over.
    public func claimPublication(app: String, name: String, node: String, handedOver: Bool = false) -> String? {
        let leases = liveness?.leases
        let holder = publishClaims.claim(
            StreamKey(app: app, name: name), by: node, now: now(), takingOver: handedOver, holdsLease: leases.map { leases in { leases.holdsLease($0) } }
        )
        if let holder {
            CoordinatorMetrics.claimsRefused.increment()
            logger.notice("Publish claim of \(app)/\(name) by \(node) refused: \(holder) claimed it a moment before")
        }
        return holder
    }
}
