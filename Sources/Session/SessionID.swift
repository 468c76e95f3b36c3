/// A session's printable, unique id: `p-` (publisher) or `v-` (viewer) and 16 hex digits
/// of a random 64-bit number. Operators copy it from `GET /api/v1/sessions` into a kick.
public struct SessionID: Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init?(rawValue: String) {
        guard rawValue.utf8.count == 18, rawValue.hasPrefix("p-") || rawValue.hasPrefix("v-"),
              rawValue.utf8.dropFirst(2).allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) })
        else { return nil }
        self.rawValue = rawValue
    }

    private init(unchecked: String) {
        self.rawValue = unchecked
    }

    /// A new id for a session of `kind`.
    public static func make(_ kind: SessionKind) -> SessionID {
        let digits = String(UInt64.random(in: .min ... .max), radix: 16)
        let padded = String(repeating: "0", count: 16 - digits.count) + digits
        return SessionID(unchecked: (kind == .publish ? "p-" : "v-") + padded)
    }

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(String.self)
        guard let id = SessionID(rawValue: raw) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a session id"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// Whether a session publishes or plays.
public enum SessionKind: String, Sendable, Hashable, Codable {
    case publish
    case play
}
