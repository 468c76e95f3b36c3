import Foundation
import GRDB
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
    public func revokeStreamKey(id: Int64) async throws -> Bool {
        let time = now()
        return try await store.write { db in
            guard var record = try StreamKeyRecord.fetchOne(db, key: id) else { return false }
            if record.revokedAt == nil {
                record.revokedAt = time
                try record.update(db)
                try EventRecord.record(db, time: time, kind: "key.revoked", subject: "\(record.app)/\(record.name)", detail: "key \(id)")
            }
            return true
        }
    }

    /// Whether `key` is an unrevoked key of `app/name`. Every candidate is hashed and
    /// compared in full, so the answer's timing does not depend on how much of a key
    /// matched. Refusals are audited; acceptances are not (one per publish, not news).
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
            try await store.write { db in
                try EventRecord.record(db, time: time, kind: "key.refused", subject: "\(app)/\(name)")
            }
        }
        return valid
    }

    /// Every key, revoked ones included, without secrets.
    public func streamKeys() async throws -> [StreamKeySummary] {
        try await store.read { db in
            try StreamKeyRecord.order(StreamKeyRecord.Columns.id).fetchAll(db).map(StreamKeySummary.init)
        }
    }
}
