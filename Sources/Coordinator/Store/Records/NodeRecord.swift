import Cluster
import Foundation
import GRDB

/// A row of `nodes`: a node that registered once, alive, dead, or gone on its own word (left).
struct NodeRecord: Codable, Sendable, Hashable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "nodes"

    var id: String
    var role: NodeRole
    var advertiseHost: String
    var state: NodeState
    /// The load the node last reported (its own measure, 0 = idle).
    var load: Double
    var registeredAt: Date
    var lastHeartbeatAt: Date
    /// Draining: alive, but given no new jobs; its jobs are handed over to others.
    var draining = false

    enum NodeState: String, Codable, Sendable, Hashable {
        case alive, dead, left
    }

    enum CodingKeys: String, CodingKey {
        case id, role, state, load, draining
        case advertiseHost = "advertise_host"
        case registeredAt = "registered_at"
        case lastHeartbeatAt = "last_heartbeat_at"
    }

    enum Columns {
        static let id = Column(CodingKeys.id)
        static let role = Column(CodingKeys.role)
        static let state = Column(CodingKeys.state)
        static let load = Column(CodingKeys.load)
        static let lastHeartbeatAt = Column(CodingKeys.lastHeartbeatAt)
        static let draining = Column(CodingKeys.draining)
    }
}

extension DerivableRequest<NodeRecord> {
    func alive() -> Self { filter(NodeRecord.Columns.state == NodeRecord.NodeState.alive.rawValue) }

    /// Alive nodes that admit publishers (and so cache stream keys).
    func aliveIngests() -> Self {
        alive().filter([NodeRole.ingest.rawValue, NodeRole.all.rawValue].contains(NodeRecord.Columns.role))
    }

    /// Alive nodes that take transcode jobs (a draining one takes none).
    func aliveTranscoders() -> Self {
        alive().filter([NodeRole.transcode.rawValue, NodeRole.all.rawValue].contains(NodeRecord.Columns.role))
            .filter(NodeRecord.Columns.draining == false)
    }
}
