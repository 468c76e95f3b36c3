import Cluster
import Foundation

/// A node as the admin API lists it.
public struct NodeSummary: Codable, Sendable, Hashable {
    public var id: String
    public var role: NodeRole
    public var advertiseHost: String
    /// `alive` or `dead`.
    public var state: String
    public var load: Double
    /// Draining (`POST /api/v1/node/drain` or SIGTERM on the node): given no new jobs, its
    /// jobs handed over to other transcoders.
    public var draining: Bool
    /// Transcode jobs placed on the node (streams, not rungs).
    public var transcodeJobs: Int
    public var registeredAt: Date
    public var lastHeartbeatAt: Date

    init(_ record: NodeRecord, transcodeJobs: Int) {
        id = record.id
        role = record.role
        advertiseHost = record.advertiseHost
        state = record.state.rawValue
        load = record.load
        draining = record.draining
        self.transcodeJobs = transcodeJobs
        registeredAt = record.registeredAt
        lastHeartbeatAt = record.lastHeartbeatAt
    }
}
