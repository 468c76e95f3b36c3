/// A transcode job: decode `app/name` from `ingestNode` once and produce every rung.
/// A job is never split across transcoders (the source is decoded once per job).
public struct TranscodeAssignment: Codable, Sendable, Hashable {
    public var app: String
    public var name: String
    /// The node holding the publisher, whose `media.<app>.<name>.src` the job reads.
    public var ingestNode: String
    public var rungs: [RungSpec]

    public init(app: String, name: String, ingestNode: String, rungs: [RungSpec]) {
        self.app = app
        self.name = name
        self.ingestNode = ingestNode
        self.rungs = rungs
    }
}
