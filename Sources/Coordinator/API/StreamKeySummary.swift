import Foundation

/// A stream key as the admin API lists it: never the key or its hash.
public struct StreamKeySummary: Codable, Sendable, Hashable {
    public var id: Int64
    public var app: String
    public var name: String
    public var createdAt: Date
    public var revokedAt: Date?

    init(_ record: StreamKeyRecord) {
        id = record.id ?? 0
        app = record.app
        name = record.name
        createdAt = record.createdAt
        revokedAt = record.revokedAt
    }
}

/// A key just created: the only time its plaintext `key` exists outside the publisher.
public struct CreatedStreamKey: Codable, Sendable, Hashable {
    public var id: Int64
    public var app: String
    public var name: String
    public var createdAt: Date
    /// The key to give the publisher. It is not stored and cannot be shown again.
    public var key: String

    init(summary: StreamKeySummary, key: String) {
        id = summary.id
        app = summary.app
        name = summary.name
        createdAt = summary.createdAt
        self.key = key
    }
}
