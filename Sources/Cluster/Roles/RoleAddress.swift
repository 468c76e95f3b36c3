/// The well-known names of the role actors on their node: a node's `IngestNode`,
/// `TranscodeWorker`, `RelayNode` and `EdgeNode` are `actor.<nodeID>.<name>` on the bus.
public enum RoleAddress {
    public static let ingest = "ingest"
    public static let transcodeWorker = "transcoder"
    public static let relay = "relay"
    public static let edge = "edge"
    /// Every node that serves clients: its sessions (`SessionsAPI`).
    public static let sessions = "sessions"

    /// The id of role actor `name` on node `nodeID`.
    public static func id(_ name: String, onNode nodeID: String) throws(NodeActorSystemError) -> NodeActorID {
        try NodeActorID(nodeID: nodeID, name: name)
    }
}
