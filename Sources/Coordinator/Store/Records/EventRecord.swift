import Foundation
import GRDB

/// A row of `events`, the audit trail: what happened (`kind`), to what (`subject`, e.g.
/// a node id or `app/name`), and details for a human.
struct EventRecord: Codable, Sendable, Hashable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "events"

    var id: Int64?
    var time: Date
    var kind: String
    var subject: String
    var detail: String

    init(time: Date, kind: String, subject: String, detail: String = "") {
        self.time = time
        self.kind = kind
        self.subject = subject
        self.detail = detail
    }

    mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }

    enum Columns {
        static let id = Column("id")
        static let kind = Column("kind")
    }

    /// Records an event in the current transaction.
    static func record(_ db: Database, time: Date, kind: String, subject: String, detail: String = "") throws {
        var event = EventRecord(time: time, kind: kind, subject: subject, detail: detail)
        try event.insert(db)
    }
}
