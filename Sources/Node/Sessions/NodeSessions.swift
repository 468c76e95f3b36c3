import Cluster
import Distributed

/// A node's sessions as a distributed actor (`SessionsAPI`, named `RoleAddress.sessions`):
/// the coordinator's `GET /api/v1/sessions` asks every node for its live sessions, and its
/// `DELETE` asks them to kick one.
distributed actor NodeSessions: SessionsAPI {
    typealias ActorSystem = NodeActorSystem

    /// The most sessions one answer carries: a reply must fit the bus's max payload.
    static let maxReported = 2000

    private let table: SessionTable

    init(table: SessionTable, actorSystem: NodeActorSystem) {
        self.table = table
        self.actorSystem = actorSystem
    }

    distributed func sessions(limit: Int) async -> [SessionReport] {
        Array(table.list().prefix(max(0, min(limit, Self.maxReported))))
    }

    distributed func kick(id: String, reason: String) async -> Bool {
        table.kick(id, reason: String(reason.prefix(SessionTable.maxReasonBytes))) == .kicked
    }
}
