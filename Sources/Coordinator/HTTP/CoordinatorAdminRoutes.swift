import Cluster
import Foundation
import Hummingbird
import Media

/// The coordinator's admin HTTP API under `/api/v1`, every route behind a bearer token
/// (`docs/openapi.yaml`):
///
/// - `GET /api/v1/nodes`
/// - `GET /api/v1/nodes/{id}/streams`: what the node carries now, asked of its role actors
/// - `GET /api/v1/streams`: live streams with their ffprobe-like facts, renditions,
///   viewers per relay and uptime
/// - `GET /api/v1/streams/{app}/{name}`: one live stream, with its sessions on every node
/// - `POST /api/v1/streams/{app}/{name}/kick`: 202; the ingest drops the publisher at once
///   (or on its next heartbeat when it cannot be called)
/// - `GET /api/v1/sessions` (`?path=&protocol=&kind=&node=`), `GET` and `DELETE
///   /api/v1/sessions/{id}` (`?reason=`): every node's live sessions, asked of each node
///   (`SessionsAPI`), and a kick on whichever holds it
/// - `GET /api/v1/keys`, `POST /api/v1/keys` (`{"app", "name"}` → the key, once),
///   `DELETE /api/v1/keys/{id}`
///
/// The node mounts it on its HTTP router: `CoordinatorAdminRoutes(state:bearerToken:).register(on: router)`.
public struct CoordinatorAdminRoutes: Sendable {
    public let state: CoordinatorState
    private let bearerToken: String

    /// - Parameter bearerToken: the secret operators present; empty refuses every request.
    public init(state: CoordinatorState, bearerToken: String) {
        self.state = state
        self.bearerToken = bearerToken
    }

    /// The protocols a session may have (`StreamProtocol`'s names).
    static let sessionProtocols = ["rtmp", "http-flv", "hls", "srt", "pull", "transcode", "forward"]

    public func register<Context: RequestContext>(on router: Router<Context>) {
        let api = router.group("/api/v1").add(middleware: BearerTokenMiddleware<Context>(token: bearerToken))
        let state = state
        api.get("/nodes") { _, _ in
            try AdminJSON.response(NodeList(nodes: try await state.nodes()))
        }
        api.get("/nodes/:id/streams") { _, context in
            let id = context.parameters.get("id") ?? ""
            do {
                guard let streams = try await state.liveStreams(onNode: id) else {
                    return AdminJSON.error(status: .notFound, message: "no node \(id)")
                }
                return try AdminJSON.response(NodeStreamList(node: id, streams: streams))
            } catch let error as NodeActorSystemError {
                return AdminJSON.error(status: .gatewayTimeout, message: "node \(id) does not answer: \(error)")
            } catch let error as CoordinatorError {
                return AdminJSON.error(status: .gatewayTimeout, message: "node \(id) cannot be reached: \(error)")
            }
        }
        api.get("/streams") { _, _ in
            try AdminJSON.response(StreamList(streams: try await state.liveStreams()))
        }
        api.get("/streams/:app/:name") { _, context in
            let app = context.parameters.get("app") ?? ""
            let name = context.parameters.get("name") ?? ""
            guard StreamPath.isValidComponent(app), StreamPath.isValidComponent(name) else {
                return AdminJSON.error(status: .badRequest, message: "invalid stream path")
            }
            guard let stream = try await state.liveStreams().first(where: { $0.app == app && $0.name == name }) else {
                return AdminJSON.error(status: .notFound, message: "\(app)/\(name) is not live")
            }
            let (sessions, unreachable) = try await state.liveSessions()
            let path = "\(app)/\(name)"
            let ofStream = sessions.filter { $0.path == path || $0.path.hasPrefix(path + "/") }
            return try AdminJSON.response(StreamDetail(stream: stream, sessions: ofStream, unreachable: unreachable))
        }
        api.post("/streams/:app/:name/kick") { _, context in
            let app = context.parameters.get("app") ?? ""
            let name = context.parameters.get("name") ?? ""
            guard StreamPath.isValidComponent(app), StreamPath.isValidComponent(name) else {
                return AdminJSON.error(status: .badRequest, message: "invalid stream path")
            }
            guard try await state.kick(app: app, name: name) else {
                return AdminJSON.error(status: .notFound, message: "\(app)/\(name) is not live")
            }
            return try AdminJSON.response(KickAccepted(app: app, name: name), status: .accepted)
        }
        api.get("/sessions") { request, _ in
            let query = request.uri.queryParameters
            let (sessions, unreachable) = try await state.liveSessions()
            let path = query["path"].map(String.init)
            let proto = query["protocol"].map(String.init)
            let kind = query["kind"].map(String.init)
            let node = query["node"].map(String.init)
            // The values docs/openapi.yaml lists; anything else is a client's mistake, said so.
            if let proto, !Self.sessionProtocols.contains(proto) {
                return AdminJSON.error(status: .badRequest, message: "protocol must be one of \(Self.sessionProtocols.joined(separator: ", "))")
            }
            if let kind, !["publish", "play"].contains(kind) {
                return AdminJSON.error(status: .badRequest, message: "kind must be publish or play")
            }
            let filtered = sessions.filter { session in
                (path.map { session.path == $0 || session.path.hasPrefix($0 + "/") } ?? true)
                    && (proto.map { session.protocol == $0 } ?? true)
                    && (kind.map { session.kind == $0 } ?? true)
                    && (node.map { session.node == $0 } ?? true)
            }
            return try AdminJSON.response(ClusterSessionList(sessions: filtered, unreachable: unreachable))
        }
        api.get("/sessions/:id") { _, context in
            let id = context.parameters.get("id") ?? ""
            guard SessionReport.isValidID(id), let session = try await state.liveSessions().sessions.first(where: { $0.id == id }) else {
                return AdminJSON.error(status: .notFound, message: "no such session")
            }
            return try AdminJSON.response(session)
        }
        api.delete("/sessions/:id") { request, context in
            let id = context.parameters.get("id") ?? ""
            let given = request.uri.queryParameters["reason"].map(String.init)
            if let given, given.count > 200 {
                return AdminJSON.error(status: .badRequest, message: "reason is at most 200 characters")
            }
            let reason = given ?? "kicked by an operator"
            guard SessionReport.isValidID(id) else {
                return AdminJSON.error(status: .notFound, message: "no such session")
            }
            if try await state.kickSession(id, reason: reason) {
                return Response(status: .accepted)
            }
            // Listed but not kicked: a transcoder's rung, which ends with its stream.
            if try await state.liveSessions().sessions.contains(where: { $0.id == id && $0.protocol == "transcode" }) {
                return AdminJSON.error(status: .conflict, message: "this session cannot be kicked: a transcoder's rung ends with its stream")
            }
            return AdminJSON.error(status: .notFound, message: "no such session")
        }
        api.get("/keys") { _, _ in
            try AdminJSON.response(StreamKeyList(keys: try await state.streamKeys()))
        }
        api.post("/keys") { request, _ in
            guard let body = try await AdminJSON.decode(CreateStreamKeyRequest.self, from: request) else {
                return AdminJSON.error(status: .badRequest, message: "expected a JSON body {\"app\": …, \"name\": …}")
            }
            guard StreamPath.isValidComponent(body.app), StreamPath.isValidComponent(body.name) else {
                return AdminJSON.error(status: .badRequest, message: "invalid stream path")
            }
            return try AdminJSON.response(try await state.createStreamKey(app: body.app, name: body.name), status: .created)
        }
        api.delete("/keys/:id") { _, context in
            guard let id = context.parameters.get("id").flatMap({ Int64($0) }) else {
                return AdminJSON.error(status: .badRequest, message: "key ids are integers")
            }
            guard try await state.revokeStreamKey(id: id) else {
                return AdminJSON.error(status: .notFound, message: "no key \(id)")
            }
            return Response(status: .noContent)
        }
    }
}
