import Cluster
import Foundation
import GRDB
import Logging
import Metrics

extension CoordinatorState {
    /// Registers (or re-registers) a node and reconciles the streams it reports.
    public func register(_ registration: NodeRegistration) async throws -> HeartbeatReply {
        guard (try? NodeActorID(nodeID: registration.nodeID, name: CoordinatorAddress.actorName)) != nil else {
            throw CoordinatorError.invalidNodeID(registration.nodeID)
        }
        let time = now()
        let ladders = configuration.ladders
        let grace = configuration.heartbeatInterval.timeInterval * 2
        let (instructions, placed) = try await store.write { db in
            let existing = try NodeRecord.fetchOne(db, key: registration.nodeID)
            let node = NodeRecord(
                id: registration.nodeID, role: registration.role, advertiseHost: registration.advertiseHost, state: .alive,
                load: existing?.load ?? 0, registeredAt: existing?.registeredAt ?? time, lastHeartbeatAt: time,
                draining: existing?.draining ?? false
            )
            try node.save(db)
            try EventRecord.record(
                db, time: time, kind: existing == nil ? "node.registered" : "node.reregistered", subject: node.id,
                detail: "\(node.role.rawValue) at \(node.advertiseHost), \(registration.streams.count) streams"
            )
            let placed = node.role.transcodes ? try Placement.placeUnplacedJobs(db) : [:]
            let instructions = try Reconciliation.reconcile(
                db, node: node, reports: registration.streams, time: time, ladders: ladders, endGrace: grace
            )
            return (instructions, placed)
        }
        awaitingReconciliation.remove(registration.nodeID)
        recordViewers(of: registration.nodeID, from: registration.streams)
        for (stream, node) in placed.sorted(by: { $0.key < $1.key }) {
            logger.info("Transcode job placed: \(stream) on \(node)")
        }
        // The registering node gets its own jobs in this reply.
        pushJobs(of: placed.filter { $0.value != registration.nodeID }.keys.sorted())
        return reply(instructions + takeKicks(for: registration.nodeID) + takeRevocations(for: registration.nodeID))
    }

    /// Records a heartbeat: the node is alive (revived if it was dead), its load and
    /// streams are taken as reported, and the reply says what it should do. A node the
    /// coordinator has no record of is asked to register.
    public func heartbeat(nodeID: String, load: Double, streams: [StreamReport]) async throws -> HeartbeatReply {
        let time = now()
        let ladders = configuration.ladders
        let grace = configuration.heartbeatInterval.timeInterval * 2
        // A NaN or negative load would break the ordering of placement.
        let load = load.isFinite ? max(0, load) : 0
        let instructions: [NodeInstruction]? = try await store.write { db in
            // A node that left registers when it comes back (a heartbeat it sent before its
            // word, answered after, does not bring it back).
            guard var node = try NodeRecord.fetchOne(db, key: nodeID), node.state != .left else { return nil }
            let revived = node.state == .dead
            node.state = .alive
            node.load = load
            node.lastHeartbeatAt = time
            try node.update(db)
            if revived {
                try EventRecord.record(db, time: time, kind: "node.revived", subject: nodeID, detail: "\(streams.count) streams")
                if node.role.transcodes {
                    _ = try Placement.placeUnplacedJobs(db)
                }
            }
            return try Reconciliation.reconcile(db, node: node, reports: streams, time: time, ladders: ladders, endGrace: grace)
        }
        guard let instructions else {
            return reply([.register])
        }
        awaitingReconciliation.remove(nodeID)
        recordViewers(of: nodeID, from: streams)
        return reply(instructions + takeKicks(for: nodeID) + takeRevocations(for: nodeID))
    }

    /// A node drains: it is given no new jobs, and each of its jobs moves to the
    /// least-loaded other transcoder, named as taking over from it (the draining node
    /// encodes on until the new one takes over at a source keyframe, then stops the job
    /// itself). A job with no other transcoder to go to stays. Returns the jobs moved
    /// (`app/name`).
    public func drain(nodeID: String) async throws -> [String] {
        let time = now()
        let moves: [TranscodeMove]? = try await store.write { db in
            guard var node = try NodeRecord.fetchOne(db, key: nodeID) else { return nil }
            if !node.draining {
                node.draining = true
                try node.update(db)
                try EventRecord.record(db, time: time, kind: "node.draining", subject: nodeID, detail: "\(node.role.rawValue)")
            }
            let moves = try Placement.moveJobs(db, off: nodeID, handover: true)
            for move in moves {
                try EventRecord.record(db, time: time, kind: "transcode.moved", subject: "\(move.app)/\(move.name)", detail: "\(move.from) → \(move.to ?? "unplaced"), handover (drain)")
            }
            return moves
        }
        guard let moves else { throw CoordinatorError.unknownNode(nodeID) }
        logger.notice("Node \(nodeID) drains: \(moves.count) transcode jobs move")
        CoordinatorMetrics.transcodeMoves.increment(by: moves.count)
        pushJobs(of: moves.map { StreamKey(app: $0.app, name: $0.name) })
        return moves.map { "\($0.app)/\($0.name)" }
    }

    /// Nodes whose lease ran out, or whose connection a probe found gone, and nodes that
    /// said they leave: judged from the lease table (`LeaseTable.judge`), without the
    /// database. Empty without beacons.
    func judgeLeases() async -> Departures {
        guard let liveness else { return Departures() }
        let judgement = liveness.leases.judge(localNodeID: configuration.localNodeID)
        var gone = Set(judgement.expired)
        if !judgement.suspects.isEmpty {
            let probe = liveness.probe
            await withTaskGroup(of: (String, Bool).self) { group in
                for nodeID in judgement.suspects {
                    group.addTask { (nodeID, await probe(nodeID)) }
                }
                for await (nodeID, isGone) in group where isGone {
                    gone.insert(nodeID)
                }
            }
        }
        return Departures(gone: gone, left: Set(judgement.left))
    }

    /// Declares dead every alive node that has lost its lease (`gone`, from `judgeLeases`),
    /// or, for a node that sends no beacons, that has been silent for `deadAfter`, and
    /// records as left every alive node that said it leaves (`left`): either way, ends the
    /// streams it ingested and moves its transcode jobs. A node that left is logged at
    /// notice, as `node.left`, and not counted in `estuary_coordinator_dead_nodes_total`
    /// (a rolling restart is no death); it comes back alive when it registers again. A node whose lease holds is alive
    /// however late its heartbeats (it is busy), up to `wedgedAfter`; the coordinator's own
    /// node is never declared. Also handles nodes found stale at load that did not
    /// come back within `deadAfter`, places jobs left unplaced, and writes the
    /// `key.refused` events of refusals folded in a window that is over. Returns the moves.
    @discardableResult
    public func sweep(gone: Set<String> = [], left: Set<String> = []) async throws -> [TranscodeMove] {
        let time = now()
        let cutoff = time.addingTimeInterval(-configuration.deadAfter.timeInterval)
        let wedgedCutoff = time.addingTimeInterval(-configuration.wedgedAfter.timeInterval)
        let leases = liveness?.leases
        let localNodeID = configuration.localNodeID
        let unreconciled = time >= reconcileDeadline ? awaitingReconciliation : []
        // Taken out before the write: should it fail, these counts are lost (the counter
        // has them), never told twice.
        let refusals = refusedKeys.flush(at: time)
        let (died, departed, moves, placed) = try await store.write { db in
            try Self.recordRefusals(db, refusals, time: time)
            var died: [String] = []
            var departed: [String] = []
            for var node in try NodeRecord.all().alive().fetchAll(db) where node.id != localNodeID {
                if left.contains(node.id) {
                    node.state = .left
                    try node.update(db)
                    try EventRecord.record(db, time: time, kind: "node.left", subject: node.id, detail: "said it leaves (a drain's end, a signal)")
                    departed.append(node.id)
                    continue
                }
                let detail: String
                if gone.contains(node.id) {
                    detail = "lost its lease (no beacon for \(leases?.settings.lease ?? .zero), or its connection is gone)"
                } else if leases?.holdsLease(node.id) == true {
                    guard node.lastHeartbeatAt < wedgedCutoff else { continue }
                    detail = "beacons but no heartbeat since \(node.lastHeartbeatAt): wedged"
                } else if node.lastHeartbeatAt < cutoff {
                    detail = "no heartbeat since \(node.lastHeartbeatAt)"
                } else {
                    continue
                }
                node.state = .dead
                try node.update(db)
                try EventRecord.record(db, time: time, kind: "node.dead", subject: node.id, detail: detail)
                died.append(node.id)
            }
            // Stale nodes that heartbeated again are alive now and no longer listed.
            let stillDead = try NodeRecord.filter(keys: unreconciled).fetchAll(db).filter { $0.state == .dead }.map(\.id)
            var moves: [TranscodeMove] = []
            for nodeID in (died + departed + stillDead).sorted() {
                let reason = departed.contains(nodeID) ? "ingest \(nodeID) left" : "ingest \(nodeID) dead"
                try Reconciliation.endStreams(db, ingestedBy: nodeID, time: time, reason: reason)
                let moved = try Placement.moveJobs(db, off: nodeID)
                for move in moved {
                    try EventRecord.record(db, time: time, kind: "transcode.moved", subject: "\(move.app)/\(move.name)", detail: "\(move.from) → \(move.to ?? "unplaced")")
                }
                moves += moved
            }
            let placed = try Placement.placeUnplacedJobs(db)
            return (died + stillDead, departed, moves, placed)
        }
        // The new transcoders start the moved jobs now rather than at their next heartbeat.
        pushJobs(of: (moves.filter { $0.to != nil }.map { StreamKey(app: $0.app, name: $0.name) }
            + placed.keys.sorted()))
        if !unreconciled.isEmpty {
            awaitingReconciliation.removeAll()
        }
        for nodeID in gone.union(left) { leases?.forget(nodeID) }
        publishClaims.prune(now: time)
        CoordinatorMetrics.deadNodes.increment(by: died.count)
        CoordinatorMetrics.nodesLeft.increment(by: departed.count)
        CoordinatorMetrics.transcodeMoves.increment(by: moves.count)
        for nodeID in died + departed {
            if departed.contains(nodeID) {
                logger.notice("Node \(nodeID) left")
            } else {
                logger.warning("Node \(nodeID) is dead")
            }
            for key in viewers.keys {
                viewers[key]?[nodeID] = nil
            }
            pendingKicks[nodeID] = nil
            pendingRevocations[nodeID] = nil
        }
        viewers = viewers.filter { !$0.value.isEmpty }
        return moves
    }

    /// Every node ever registered, by id.
    public func nodes() async throws -> [NodeSummary] {
        let jobs = try await store.read { db in try Placement.jobCounts(db) }
        let records = try await store.read { db in try NodeRecord.order(NodeRecord.Columns.id).fetchAll(db) }
        return records.map { NodeSummary($0, transcodeJobs: jobs[$0.id, default: 0]) }
    }

    /// Relays' viewer counts from a node's reports; a stream it no longer reports has none.
    func recordViewers(of nodeID: String, from reports: [StreamReport]) {
        for key in viewers.keys {
            viewers[key]?[nodeID] = nil
        }
        // A relay counts a rung's players for the rung's stream (`RelayNode`).
        for report in reports {
            if let count = report.viewers {
                viewers[StreamKey(app: report.app, name: report.name), default: [:]][nodeID] = count
            }
        }
        viewers = viewers.filter { !$0.value.isEmpty }
    }

    func takeKicks(for nodeID: String) -> [NodeInstruction] {
        guard let kicks = pendingKicks.removeValue(forKey: nodeID) else { return [] }
        return kicks.sorted { ($0.app, $0.name) < ($1.app, $1.name) }.map { .kick(app: $0.app, name: $0.name) }
    }

    func takeRevocations(for nodeID: String) -> [NodeInstruction] {
        guard let revoked = pendingRevocations.removeValue(forKey: nodeID) else { return [] }
        return revoked.sorted().map { .keyRevoked(app: $0.app, name: $0.name) }
    }
}
