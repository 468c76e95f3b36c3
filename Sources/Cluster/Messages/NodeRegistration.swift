/// What a node tells the coordinator when it starts, and again whenever a heartbeat reply
/// asks it to (`NodeInstruction.register`, after the coordinator lost track of it).
public struct NodeRegistration: Codable, Sendable, Hashable {
    /// `--node-id`; one bus subject token (see `NodeActorID`).
    public var nodeID: String
    public var role: NodeRole
    /// The host other nodes and players reach it on (`--advertise-host`).
    public var advertiseHost: String
    /// Streams the node already carries (after a coordinator restart, or its own
    /// reconnect): the coordinator takes them as the truth about this node.
    public var streams: [StreamReport]

    public init(nodeID: String, role: NodeRole, advertiseHost: String, streams: [StreamReport] = []) {
        self.nodeID = nodeID
        self.role = role
        self.advertiseHost = advertiseHost
        self.streams = streams
    }
}
