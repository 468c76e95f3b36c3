/// A transcode job: decode `app/name` from `ingestNode` once and produce every rung.
/// A job is never split across transcoders (the source is decoded once per job).
public struct TranscodeAssignment: Codable, Sendable, Hashable {
    public var app: String
    public var name: String
    /// The node holding the publisher, whose `media.<app>.<name>.src` the job reads.
    public var ingestNode: String
    public var rungs: [RungSpec]
    /// A draining transcoder that runs the job now: the new one encodes beside it and
    /// takes over at a source keyframe (`RungHandover`) instead of publishing at once.
    public var takesOverFrom: String?

    public init(app: String, name: String, ingestNode: String, rungs: [RungSpec], takesOverFrom: String? = nil) {
        self.app = app
        self.name = name
        self.ingestNode = ingestNode
        self.rungs = rungs
        self.takesOverFrom = takesOverFrom
    }
}
