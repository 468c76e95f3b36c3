import Cluster
import Distributed
import Logging

/// How the coordinator reaches a node between its heartbeats: remote calls to the node's
/// role actors (`TranscodeWorkerAPI`, `IngestNodeAPI`, `RelayNodeAPI`).
///
/// Every call is bounded by `timeout` and may fail (the node died, or is reconnecting to
/// NATS); callers treat a failure as "deliver it with the next heartbeat instead", so the
/// push only ever makes things faster. A role actor in the coordinator's own process
/// (`--role all`) is called the same way, through the bus.
public struct NodeDispatch: Sendable {
    let system: NodeActorSystem
    let timeout: Duration

    public init(system: NodeActorSystem, timeout: Duration = .seconds(1)) {
        self.system = system
        self.timeout = timeout
    }

    /// Pushes a placed (or moved) job to its transcoder.
    func assign(_ assignment: TranscodeAssignment, to node: String) async throws {
        let worker = try $TranscodeWorkerAPI.resolve(id: RoleAddress.id(RoleAddress.transcodeWorker, onNode: node), using: system)
        try await bounded { try await worker.assign(assignment) }
    }

    /// Disconnects a publisher now; false when the ingest holds none for the stream.
    func kick(app: String, name: String, on node: String) async throws -> Bool {
        let ingest = try $IngestNodeAPI.resolve(id: RoleAddress.id(RoleAddress.ingest, onNode: node), using: system)
        return try await bounded { try await ingest.kick(app: app, name: name) }
    }

    /// Tells an ingest that a key of `app/name` was revoked; true when it disconnected the
    /// stream's publisher.
    func keyRevoked(app: String, name: String, on node: String) async throws -> Bool {
        let ingest = try $IngestNodeAPI.resolve(id: RoleAddress.id(RoleAddress.ingest, onNode: node), using: system)
        return try await bounded { try await ingest.keyRevoked(app: app, name: name) }
    }

    /// What a node carries right now, asked of each role actor it hosts, merged by stream.
    func streams(of node: String, role: NodeRole) async throws -> [StreamReport] {
        var reports: [StreamReport] = []
        if role == .ingest || role == .all {
            let ingest = try $IngestNodeAPI.resolve(id: RoleAddress.id(RoleAddress.ingest, onNode: node), using: system)
            reports += try await bounded { try await ingest.streams() }
        }
        if role.transcodes {
            let worker = try $TranscodeWorkerAPI.resolve(id: RoleAddress.id(RoleAddress.transcodeWorker, onNode: node), using: system)
            reports += try await bounded { try await worker.jobs() }
        }
        if role == .relay || role == .all {
            let relay = try $RelayNodeAPI.resolve(id: RoleAddress.id(RoleAddress.relay, onNode: node), using: system)
            reports += try await bounded { try await relay.streams() }
        }
        if role == .edge {
            let edge = try $EdgeNodeAPI.resolve(id: RoleAddress.id(RoleAddress.edge, onNode: node), using: system)
            reports += try await bounded { try await edge.pulls() }
        }
        return StreamReport.merged(reports)
    }

    /// A node's live sessions (`SessionsAPI`), at most `limit`.
    func sessions(of node: String, limit: Int) async throws -> [SessionReport] {
        let sessions = try $SessionsAPI.resolve(id: RoleAddress.id(RoleAddress.sessions, onNode: node), using: system)
        return try await bounded { try await sessions.sessions(limit: limit) }
    }

    /// Asks a node to kick session `id`; false when it has none.
    func kickSession(_ id: String, reason: String, on node: String) async throws -> Bool {
        let sessions = try $SessionsAPI.resolve(id: RoleAddress.id(RoleAddress.sessions, onNode: node), using: system)
        return try await bounded { try await sessions.kick(id: id, reason: reason) }
    }

    private func bounded<T: Sendable>(_ call: () async throws -> T) async throws -> T {
        try await NodeActorSystem.$callTimeout.withValue(timeout) {
            try await call()
        }
    }
}
