import AdminAPI
import Cluster
import Coordinator
import Edge
import Session

/// The node's admin API, the `APIProtocol` generated from docs/openapi.yaml. Each operation
/// is answered by the part of the node that owns it, where this process runs that part:
///
/// - the cluster's operations (nodes, streams, keys, and every node's sessions) by the
///   coordinator (`CoordinatorAdminAPI`), where it runs here;
/// - the sessions by this node's listeners (`SessionTable`) where no coordinator runs here;
/// - forwards by the ingest, pulls by the listeners, the drain by every node.
///
/// An operation this node does not serve is answered 404 with the reason, as the document
/// lists. `AdminAPIRoutes` puts it on the admin plane behind the bearer token.
struct NodeAdminAPI: APIProtocol {
    var coordinator: CoordinatorAdminAPI?
    var sessions: SessionTable?
    var drain: NodeDrain
    /// What a `POST /api/v1/node/drain` without a body asks: the configuration's drain.
    var drainDefaults: NodeDrain.Request
    var forwards: StreamForwards?
    var pulls: StaticPulls?

    /// The longest drain anyone may ask for: a day.
    static let longestGrace: Double = 86_400
    static let noCoordinator = "this node runs no coordinator: the cluster's nodes, streams and keys are served by the coordinator's admin plane"

    // MARK: The cluster's operations

    /// A cluster's operation, answered by the coordinator where it runs here, and otherwise
    /// refused with the document's 404 (`refusal`, the operation's `.notFound`).
    private func cluster<Output, Refusal: ErrorResponse>(
        _ refusal: (Refusal) -> Output, _ operation: (CoordinatorAdminAPI) async throws -> Output
    ) async throws -> Output {
        guard let coordinator else { return refusal(.saying(Self.noCoordinator)) }
        return try await operation(coordinator)
    }

    func listNodes(_ input: Operations.ListNodes.Input) async throws -> Operations.ListNodes.Output {
        try await cluster(Operations.ListNodes.Output.notFound) { try await $0.listNodes() }
    }

    func nodeStreams(_ input: Operations.NodeStreams.Input) async throws -> Operations.NodeStreams.Output {
        try await cluster(Operations.NodeStreams.Output.notFound) { try await $0.nodeStreams(input) }
    }

    func listStreams(_ input: Operations.ListStreams.Input) async throws -> Operations.ListStreams.Output {
        try await cluster(Operations.ListStreams.Output.notFound) { try await $0.listStreams() }
    }

    func getStream(_ input: Operations.GetStream.Input) async throws -> Operations.GetStream.Output {
        try await cluster(Operations.GetStream.Output.notFound) { try await $0.getStream(input) }
    }

    func kickPublisher(_ input: Operations.KickPublisher.Input) async throws -> Operations.KickPublisher.Output {
        try await cluster(Operations.KickPublisher.Output.notFound) { try await $0.kickPublisher(input) }
    }

    func listStreamKeys(_ input: Operations.ListStreamKeys.Input) async throws -> Operations.ListStreamKeys.Output {
        try await cluster(Operations.ListStreamKeys.Output.notFound) { try await $0.listStreamKeys() }
    }

    func createStreamKey(_ input: Operations.CreateStreamKey.Input) async throws -> Operations.CreateStreamKey.Output {
        try await cluster(Operations.CreateStreamKey.Output.notFound) { try await $0.createStreamKey(input) }
    }

    func revokeStreamKey(_ input: Operations.RevokeStreamKey.Input) async throws -> Operations.RevokeStreamKey.Output {
        try await cluster(Operations.RevokeStreamKey.Output.notFound) { try await $0.revokeStreamKey(input) }
    }

    // MARK: Sessions: the cluster's on a coordinator, this node's elsewhere

    static let noListener = "this node has no listener, and so no sessions (a transcoder or a lone coordinator)"

    func listSessions(_ input: Operations.ListSessions.Input) async throws -> Operations.ListSessions.Output {
        if let coordinator { return try await coordinator.listSessions(input) }
        guard let sessions else { return .notFound(.saying(Self.noListener)) }
        var filter = SessionTable.Filter()
        filter.path = input.query.path
        filter.protocol = input.query._protocol?.rawValue
        filter.kind = input.query.kind.flatMap { SessionKind(rawValue: $0.rawValue) }
        return .ok(.init(body: .json(.init(sessions: sessions.list(filter).compactMap(Components.Schemas.Session.init)))))
    }

    func getSession(_ input: Operations.GetSession.Input) async throws -> Operations.GetSession.Output {
        if let coordinator { return try await coordinator.getSession(input) }
        guard let sessions, let id = SessionID(rawValue: input.path.id),
              let report = sessions.session(id.rawValue), let session = Components.Schemas.Session(report)
        else {
            return .notFound(.saying("no such session"))
        }
        return .ok(.init(body: .json(session)))
    }

    func kickSession(_ input: Operations.KickSession.Input) async throws -> Operations.KickSession.Output {
        if let coordinator { return try await coordinator.kickSession(input) }
        if let given = input.query.reason, given.count > CoordinatorAdminAPI.maxReasonLength || given.utf8.count > SessionTable.maxReasonBytes {
            return .badRequest(.saying("reason is at most \(CoordinatorAdminAPI.maxReasonLength) characters"))
        }
        guard let sessions, let id = SessionID(rawValue: input.path.id) else { return .notFound(.saying("no such session")) }
        switch sessions.kick(id.rawValue, reason: input.query.reason ?? CoordinatorAdminAPI.defaultKickReason) {
        case .kicked: return .accepted(.init())
        case .notFound: return .notFound(.saying("no such session"))
        case .notKickable:
            return .conflict(.init(body: .json(.init(error: "this session cannot be kicked: a transcoder's rung ends with its stream"))))
        }
    }

    // MARK: This node's forwards, pulls and drain

    func listForwards(_ input: Operations.ListForwards.Input) async throws -> Operations.ListForwards.Output {
        guard let forwards else { return .notFound(.saying("this node takes no publishers, and so forwards nothing: forwards are an ingest's")) }
        let statuses = await forwards.statuses()
        return .ok(.init(body: .json(.init(forwards: statuses.map { status in
            .init(
                stream: status.stream, target: status.target, state: .init(rawValue: status.state.rawValue) ?? .stopped,
                connects: status.connects, framesSent: status.framesSent, skippedFrames: status.skippedFrames, lastError: status.lastError
            )
        }))))
    }

    func listPulls(_ input: Operations.ListPulls.Input) async throws -> Operations.ListPulls.Output {
        guard let pulls else { return .notFound(.saying("this node takes no publishers, and so pulls nothing: pulls are an ingest's")) }
        return .ok(.init(body: .json(.init(pulls: pulls.statuses().map { status in
            .init(
                stream: status.stream, source: status.source, state: .init(rawValue: status.state.rawValue) ?? .stopped,
                connects: status.connects, framesReceived: status.framesReceived, lastError: status.lastError
            )
        }))))
    }

    func getDrain(_ input: Operations.GetDrain.Input) async throws -> Operations.GetDrain.Output {
        .ok(.init(body: .json(.init(drain.status()))))
    }

    func startDrain(_ input: Operations.StartDrain.Input) async throws -> Operations.StartDrain.Output {
        var ask = drainDefaults
        ask.reason = "admin API"
        if case let .json(body) = input.body {
            if let grace = body.graceSeconds {
                guard grace.isFinite, (0...Self.longestGrace).contains(grace) else {
                    return .badRequest(.saying("graceSeconds must be within 0…\(Int(Self.longestGrace))"))
                }
                ask.grace = .milliseconds(Int64(grace * 1000))
            }
            if let target = body.reconnectTo {
                do {
                    ask.reconnectTo = try DrainTarget.validated(target)
                } catch {
                    return .badRequest(.saying("reconnectTo: \(error)"))
                }
            }
        }
        let started = drain.begin(ask)
        let status = Components.Schemas.Drain(drain.status())
        return started ? .accepted(.init(body: .json(status))) : .conflict(.init(body: .json(status)))
    }
}

extension Components.Schemas.Drain {
    init(_ status: NodeDrain.Status) {
        self.init(
            draining: status.draining, reason: status.reason, graceSeconds: status.graceSeconds,
            elapsedSeconds: status.elapsedSeconds, reconnectTo: status.reconnectTo,
            publishers: status.publishers, publishersAsked: status.publishersAsked, viewers: status.viewers
        )
    }
}
