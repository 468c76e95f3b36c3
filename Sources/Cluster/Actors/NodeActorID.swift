/// The identity of a distributed actor of a `NodeActorSystem`: the node it lives on and its
/// name there (`coordinator`, `relay.<nodeID>`). It is also its address: remote calls are
/// bus requests to `subject`, `actor.<nodeID>.<name>`.
///
/// The node id is one subject token; the name is one or more tokens separated by `.`.
/// Tokens are 1–64 characters of `A–Z a–z 0–9 - _`, so an id can never contain a NATS
/// wildcard, whitespace or an empty token, and `actor.<nodeID>.` always prefixes the name
/// unambiguously. Decoding validates the same way as `init`.
public struct NodeActorID: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The node the actor lives on (`--node-id`).
    public let nodeID: String
    /// The actor's name on its node.
    public let name: String

    /// Longest token; a subject of `actor.` + node + name stays far below NATS's limits.
    static let maxTokenLength = 64
    /// Most tokens in a name.
    static let maxNameTokens = 4

    /// - Throws: `NodeActorSystemError.invalidActorID` when a component is not made of valid tokens.
    public init(nodeID: String, name: String) throws(NodeActorSystemError) {
        guard Self.isValidNodeID(nodeID), Self.isValidName(name) else {
            throw .invalidActorID(nodeID: nodeID, name: name)
        }
        self.nodeID = nodeID
        self.name = name
    }

    /// For ids built from already-validated parts (the system's own anonymous names).
    init(validatedNodeID nodeID: String, name: String) {
        self.nodeID = nodeID
        self.name = name
    }

    /// The bus subject the actor answers on.
    public var subject: String { "actor.\(nodeID).\(name)" }

    public var description: String { subject }

    private enum CodingKeys: String, CodingKey {
        case nodeID, name
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(
            nodeID: container.decode(String.self, forKey: .nodeID),
            name: container.decode(String.self, forKey: .name)
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(nodeID, forKey: .nodeID)
        try container.encode(name, forKey: .name)
    }

    static func isValidNodeID(_ nodeID: String) -> Bool {
        isValidToken(nodeID.utf8[...])
    }

    static func isValidName(_ name: String) -> Bool {
        let tokens = name.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard tokens.count <= maxNameTokens else { return false }
        return tokens.allSatisfy(isValidToken)
    }

    private static func isValidToken(_ token: Substring.UTF8View) -> Bool {
        guard !token.isEmpty, token.count <= maxTokenLength else { return false }
        return token.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                true
            default:
                false
            }
        }
    }
}
