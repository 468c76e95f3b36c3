import Cluster
import GRDB

extension CoordinatorState {
    /// Every alive node's live sessions, asked of each node at once (each call bounded by
    /// the dispatch timeout): the sessions with their `node`, and the nodes that did not
    /// answer. Nodes that serve no clients (transcoders, a lone coordinator) are not asked.
    public func liveSessions(limitPerNode: Int = 2000) async throws -> (sessions: [SessionReport], unreachable: [String]) {
        let nodes = try await sessionNodes()
        guard let dispatch else { return ([], nodes) }
        var sessions: [SessionReport] = []
        var unreachable: [String] = []
        await withTaskGroup(of: (String, [SessionReport]?).self) { group in
            for node in nodes {
                group.addTask { (node, try? await dispatch.sessions(of: node, limit: limitPerNode)) }
            }
            for await (node, reports) in group {
                guard let reports else {
                    unreachable.append(node)
                    continue
                }
                sessions += reports.map { report in
                    var report = report
                    report.node = node
                    return report
                }
            }
        }
        return (sessions.sorted { ($0.startedAt, $0.id) < ($1.startedAt, $1.id) }, unreachable.sorted())
    }

    /// Kicks session `id` on whichever alive node holds it; false when none does.
    public func kickSession(_ id: String, reason: String) async throws -> Bool {
        let nodes = try await sessionNodes()
        guard let dispatch else { return false }
        return await withTaskGroup(of: Bool.self) { group in
            for node in nodes {
                group.addTask { (try? await dispatch.kickSession(id, reason: reason, on: node)) ?? false }
            }
            var kicked = false
            for await answer in group where answer { kicked = true }
            return kicked
        }
    }

    /// Alive nodes that serve clients.
    private func sessionNodes() async throws -> [String] {
        try await store.read { db in
            try NodeRecord.all().alive().fetchAll(db)
                .filter { [.ingest, .relay, .edge, .all].contains($0.role) }
                .map(\.id)
        }
    }
}
