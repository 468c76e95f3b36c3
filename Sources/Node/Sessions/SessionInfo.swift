import Foundation
import Session

/// A live session as `GET /api/v1/sessions` shows it.
struct SessionInfo: Codable, Sendable, Equatable {
    var id: SessionID
    var kind: SessionKind
    /// `app/name`, or `app/name/rung` for a viewer of a rung.
    var path: String
    var `protocol`: String
    var remoteAddress: String
    /// The query without values (`key=…`): keys and tokens are secrets.
    var query: String
    var startedAt: Date
    var durationSeconds: Double
    var bytesIn: Int
    var bytesOut: Int
}
