/// What a node of the cluster does (`estuary --role …`). The coordinator places transcode jobs
/// on `transcode` and `all` nodes, and tells relays where streams live on `ingest` and `all`
/// nodes.
public enum NodeRole: String, Codable, Sendable, CaseIterable {
    case ingest
    case transcode
    case relay
    case coordinator
    /// Serves players from streams it pulls from upstream servers on demand (`--upstream`).
    case edge
    /// Every role in one process (`--role all`).
    case all

    /// Whether the node runs transcode jobs.
    public var transcodes: Bool { self == .transcode || self == .all }
}
