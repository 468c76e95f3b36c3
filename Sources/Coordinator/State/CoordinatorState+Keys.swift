import Foundation
import GRDB
import Logging
import Media
import Metrics

extension CoordinatorState {
    /// Creates a stream key for `app/name`. The plaintext key is in the result and nowhere
    /// else: the database keeps a salted hash.
    public func createStreamKey(app: String, name: String) async throws -> CreatedStreamKey {
        try Self.validate(app: app, name: name)
        let time = now()
        let key = StreamKeyHasher.makeKey()
        let salt = StreamKeyHasher.makeSalt()
        let record = try await store.write { db in
            var record = StreamKeyRecord(app: app, name: name, salt: salt, keyHash: StreamKeyHasher.hash(key: key, salt: salt), createdAt: time)
            try record.insert(db)
            try EventRecord.record(db, time: time, kind: "key.created", subject: "\(app)/\(name)", detail: "key \(record.id ?? 0)")
            return record
        }
        return CreatedStreamKey(summary: StreamKeySummary(record), key: key)
    }

    /// Revokes a key. Returns false when there is no such key; revoking twice is a no-op.
    ///
    /// Ingests cache a key they verified (60 s, or 10 min while the coordinator cannot be
    /// asked), so the revocation is pushed to every live ingest before this returns: each
    /// forgets its acceptances for the stream and disconnects a publisher whose key is no
    /// longer valid. An ingest that cannot be reached now is told with its next heartbeat.
    public func revokeStreamKey(id: Int64) async throws -> Bool {
        let time = now()
        let outcome: RevocationOutcome = try await store.write { db in
            guard var record = try StreamKeyRecord.fetchOne(db, key: id) else { return .unknownKey }
            guard record.revokedAt == nil else { return .revokedBefore }
            record.revokedAt = time
            try record.update(db)
            try EventRecord.record(db, time: time, kind: "key.revoked", subject: "\(record.app)/\(record.name)", detail: "key \(id)")
            let ingests = try NodeRecord.all().aliveIngests().fetchAll(db).map(\.id)
            return .revoked(StreamKey(app: record.app, name: record.name), ingests: ingests)
        }
        switch outcome {
        case .unknownKey:
            return false
        case .revokedBefore:
            return true  // nothing new to tell anyone
        case .revoked(let stream, let ingests):
            await pushRevocation(of: stream, to: ingests)
            return true
        }
    }

    /// What the revocation's transaction found.
    private enum RevocationOutcome: Sendable {
        case unknownKey
        case revokedBefore
        /// Newly revoked: the ingests alive at that moment are to be told.
        case revoked(StreamKey, ingests: [String])
    }

    /// Tells every ingest in `nodes` at once (each call bounded by the dispatch timeout);
    /// those that do not answer get it with their next heartbeat.
    private func pushRevocation(of stream: StreamKey, to nodes: [String]) async {
        var unreached = Set(nodes)
        if let dispatch {
            let answered = await withTaskGroup(of: String?.self) { group in
                for node in nodes {
                    group.addTask {
                        do {
                            if try await dispatch.keyRevoked(app: stream.app, name: stream.name, on: node) {
                                self.logger.notice("Key revocation for \(stream) disconnected its publisher on \(node)")
                            }
                            return node
                        } catch {
                            self.logger.notice("Key revocation for \(stream) goes with the next heartbeat of \(node): \(error)")
                            return nil
                        }
                    }
                }
                var answered: [String] = []
                for await node in group { if let node { answered.append(node) } }
                return answered
            }
            unreached.subtract(answered)
        }
        CoordinatorMetrics.revocationsPushed.increment(by: nodes.count - unreached.count)
        for node in unreached {
            if pendingRevocations[node, default: []].count >= Self.maxPendingRevocations {
                // The node has not heartbeated through thousands of revocations: it is as good
                // as dead, and its caches expire on their own (60 s fresh, 10 min stale).
                logger.warning("Too many key revocations queued for \(node); \(stream) is left to its cache expiry")
                CoordinatorMetrics.revocationsDropped.increment()
                continue
            }
            pendingRevocations[node, default: []].insert(stream)
        }
    }

    /// Whether `key` is an unrevoked key of `app/name`. Every candidate is hashed and
    /// compared in full, so the answer's timing does not depend on how much of a key
    /// matched. Refusals are audited, folded into at most one event per stream a minute
    /// (`RefusedKeyAudit`: anyone can present made-up keys, as fast as they like) and
    /// counted one by one; acceptances are not audited (one per publish, not news).
    public func verifyStreamKey(app: String, name: String, key: String) async throws -> Bool {
        guard StreamPath.isValidComponent(app), StreamPath.isValidComponent(name) else { return false }
        let time = now()
        let candidates = try await store.read { db in try StreamKeyRecord.all().unrevoked().path(app: app, name: name).fetchAll(db) }
        var valid = false
        for candidate in candidates {
            // No early exit: every candidate costs the same.
            valid = StreamKeyHasher.matches(key: key, salt: candidate.salt, expected: candidate.keyHash) || valid
        }
        if !valid {
            CoordinatorMetrics.refusedStreamKeys.increment()
            let events = refusedKeys.refused(StreamKey(app: app, name: name), at: time)
            if !events.isEmpty {
                try await store.write { db in try Self.recordRefusals(db, events, time: time) }
            }
        }
        return valid
    }

    /// Records `key.refused` events in the current transaction.
    static func recordRefusals(_ db: Database, _ events: [RefusedKeyAudit.Event], time: Date) throws {
        for event in events {
            try EventRecord.record(db, time: time, kind: "key.refused", subject: event.subject, detail: event.detail)
        }
    }

    /// Every key, revoked ones included, without secrets.
    public func streamKeys() async throws -> [StreamKeySummary] {
        try await store.read { db in
            try StreamKeyRecord.order(StreamKeyRecord.Columns.id).fetchAll(db).map(StreamKeySummary.init)
        }
    }
}
