import Foundation
import Media

/// A live session (a publisher or a viewer, over any protocol) as a node reports it: what
/// `GET /api/v1/sessions` shows, on the node itself and, with `node` set, on the
/// coordinator, which asks every node (`SessionsAPI`).
public struct SessionReport: Codable, Sendable, Equatable {
    /// `p-` (publisher) or `v-` (viewer) and 16 hex digits.
    public var id: String
    /// `publish` or `play`.
    public var kind: String
    /// `app/name`, or `app/name/rung` for a viewer of a rung.
    public var path: String
    public var `protocol`: String
    public var remoteAddress: String
    /// The query without values (`key=…`): keys and tokens are secrets.
    public var query: String
    public var startedAt: Date
    public var durationSeconds: Double
    public var bytesIn: Int
    public var bytesOut: Int
    /// The node that holds it (set by the coordinator's aggregation).
    public var node: String?
    /// The transport's own measure of the link, where it has one (SRT).
    public var link: LinkStatistics?

    /// Whether `id` has a session id's form (`p-`/`v-` and 16 lower-case hex digits).
    public static func isValidID(_ id: String) -> Bool {
        id.utf8.count == 18 && (id.hasPrefix("p-") || id.hasPrefix("v-"))
            && id.utf8.dropFirst(2).allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }

    public init(
        id: String, kind: String, path: String, protocol: String, remoteAddress: String, query: String,
        startedAt: Date, durationSeconds: Double, bytesIn: Int, bytesOut: Int, node: String? = nil, link: LinkStatistics? = nil
    ) {
        self.id = id
        self.kind = kind
        self.path = path
        self.protocol = `protocol`
        self.remoteAddress = remoteAddress
        self.query = query
        self.startedAt = startedAt
        self.durationSeconds = durationSeconds
        self.bytesIn = bytesIn
        self.bytesOut = bytesOut
        self.node = node
        self.link = link
    }
}
