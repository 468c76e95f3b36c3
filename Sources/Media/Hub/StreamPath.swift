/// The name of a stream: `app/name`, as in `rtmp://host/app/name` and `http://host/app/name.flv`.
///
/// Both parts come from the network (RTMP `connect`/`publish`/`play` and HTTP paths), so
/// they are validated once here: 1–128 characters from `[A-Za-z0-9_.-]`, not starting
/// with a dot. That keeps them safe as path components for later stores (HLS segments)
/// and as bus subject tokens.
public struct StreamPath: Hashable, Sendable, CustomStringConvertible {
    public let app: String
    public let name: String

    /// The longest app or stream name accepted. Long enough for UUID-style keys.
    public static let maxComponentLength = 128

    public init(app: String, name: String) throws(StreamPathError) {
        guard Self.isValidComponent(app) else { throw .invalidApp(String(app.prefix(Self.maxComponentLength))) }
        guard Self.isValidComponent(name) else { throw .invalidName(String(name.prefix(Self.maxComponentLength))) }
        self.app = app
        self.name = name
    }

    public var description: String { "\(app)/\(name)" }

    public static func isValidComponent(_ component: some StringProtocol) -> Bool {
        let utf8 = component.utf8
        guard (1...maxComponentLength).contains(utf8.count), utf8.first != UInt8(ascii: ".") else { return false }
        return utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."):
                return true
            default:
                return false
            }
        }
    }
}

public enum StreamPathError: Error, Equatable {
    case invalidApp(String)
    case invalidName(String)
    case invalidRendition(String)
}
