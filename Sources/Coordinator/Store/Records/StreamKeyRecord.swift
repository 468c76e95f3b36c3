import Foundation
import GRDB

/// A row of `stream_keys`: a publish key for `app/name`, stored as SHA-256(salt ‖ key)
/// with a per-key random salt. The key itself is returned once at creation and never
/// stored.
struct StreamKeyRecord: Codable, Sendable, Hashable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "stream_keys"

    var id: Int64?
    var app: String
    var name: String
    var salt: Data
    var keyHash: Data
    var createdAt: Date
    var revokedAt: Date?

    mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }

    enum CodingKeys: String, CodingKey {
        case id, app, name, salt
        case keyHash = "key_hash"
        case createdAt = "created_at"
        case revokedAt = "revoked_at"
    }

    enum Columns {
        static let id = Column(CodingKeys.id)
        static let app = Column(CodingKeys.app)
        static let name = Column(CodingKeys.name)
        static let revokedAt = Column(CodingKeys.revokedAt)
    }
}

extension DerivableRequest<StreamKeyRecord> {
    func unrevoked() -> Self { filter(StreamKeyRecord.Columns.revokedAt == nil) }

    func path(app: String, name: String) -> Self {
        filter(StreamKeyRecord.Columns.app == app && StreamKeyRecord.Columns.name == name)
    }
}
