import Foundation

/// An audit event.
public struct EventSummary: Codable, Sendable, Hashable {
    public var id: Int64
    public var time: Date
    /// `node.registered`, `node.dead`, `stream.started`, `stream.kicked`, `key.created`, …
    public var kind: String
    /// A node id or `app/name`.
    public var subject: String
    public var detail: String

    init(_ record: EventRecord) {
        id = record.id ?? 0
        time = record.time
        kind = record.kind
        subject = record.subject
        detail = record.detail
    }
}
