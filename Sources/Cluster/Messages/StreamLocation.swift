/// Where a live stream lives, for a relay: the ingest holding the publisher and each
/// transcoded rendition with the transcoder producing it.
public struct StreamLocation: Codable, Sendable, Hashable {
    public var app: String
    public var name: String
    public var ingestNode: String
    public var ingestHost: String
    public var renditions: [RenditionLocation]
    /// The renditions the publisher's encoder makes (multitrack `trackN`), on the bus from
    /// the ingest: a relay opens them as it opens the transcoded ones. nil when there are none.
    public var tracks: [String]?

    public init(app: String, name: String, ingestNode: String, ingestHost: String, renditions: [RenditionLocation], tracks: [String]? = nil) {
        self.app = app
        self.name = name
        self.ingestNode = ingestNode
        self.ingestHost = ingestHost
        self.renditions = renditions
        self.tracks = tracks
    }
}

/// One transcoded rendition of a stream and where it is produced.
public struct RenditionLocation: Codable, Sendable, Hashable {
    public var rung: RungSpec
    /// nil while no transcoder is alive to take the job.
    public var transcoderNode: String?
    public var state: RenditionState

    public init(rung: RungSpec, transcoderNode: String?, state: RenditionState) {
        self.rung = rung
        self.transcoderNode = transcoderNode
        self.state = state
    }
}

/// The life of a rendition's job.
public enum RenditionState: String, Codable, Sendable, Hashable {
    /// No alive transcoder could take it; placed when one appears.
    case unplaced
    /// Assigned to a transcoder that has not reported it yet.
    case assigned
    /// Reported by its transcoder.
    case running
    /// A rung its transcoder does not encode: the ladder's rungs above the source's picture
    /// (the rung exists again if the source grows). Never given to relays.
    case skipped
    /// The stream ended.
    case ended
}
