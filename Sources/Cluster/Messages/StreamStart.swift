/// An ingest's notice that it accepted a publisher for `app/name`.
public struct StreamStart: Codable, Sendable, Hashable {
    public var app: String
    public var name: String
    /// The ingest node holding the publisher.
    public var ingestNode: String
    /// What is known at publish time (often only the container and codecs).
    public var facts: StreamFacts

    public init(app: String, name: String, ingestNode: String, facts: StreamFacts = StreamFacts()) {
        self.app = app
        self.name = name
        self.ingestNode = ingestNode
        self.facts = facts
    }
}
