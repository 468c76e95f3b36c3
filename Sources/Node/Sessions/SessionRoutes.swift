import Cluster
import Coordinator
import Foundation
import Hummingbird
import NIOCore
import Session

/// `/api/v1/sessions` on every node, behind the admin token:
/// - `GET /api/v1/sessions?path=live/cam&protocol=rtmp&kind=play`: the live sessions, each
///   filter optional (`path` matches a stream and its rungs);
/// - `GET /api/v1/sessions/{id}`: one;
/// - `DELETE /api/v1/sessions/{id}`: kicks it (`?reason=…`, at most 200 bytes, is what its
///   client is told and what the log says), 202 once asked, 404 for no such session.
struct SessionRoutes {
    let table: SessionTable
    let adminToken: String?

    struct Listing: Encodable {
        var sessions: [SessionReport]
    }

    static let maxReasonBytes = 800

    func register(on router: Router<NodeRequestContext>) {
        let group = router.group("/api/v1/sessions")
            .add(middleware: BearerTokenMiddleware<NodeRequestContext>(token: adminToken ?? ""))
        let table = table
        group.get { request, _ -> Response in
            let query = request.uri.queryParameters
            var filter = SessionTable.Filter()
            filter.path = query["path"].map(String.init)
            if let name = query["protocol"] {
                guard StreamProtocol(rawValue: String(name)) != nil else {
                    return Self.error(.badRequest, "protocol must be one of rtmp, http-flv, hls, srt, pull, transcode, forward")
                }
                filter.protocol = String(name)
            }
            if let kind = query["kind"] {
                guard let parsed = SessionKind(rawValue: String(kind)) else {
                    return Self.error(.badRequest, "kind must be publish or play")
                }
                filter.kind = parsed
            }
            return try Self.json(Listing(sessions: table.list(filter)))
        }
        group.get("/:id") { _, context -> Response in
            guard let id = context.parameters.get("id").flatMap(SessionID.init(rawValue:)), let session = table.session(id.rawValue) else {
                return Self.error(.notFound, "no such session")
            }
            return try Self.json(session)
        }
        group.delete("/:id") { request, context -> Response in
            guard let id = context.parameters.get("id").flatMap(SessionID.init(rawValue:)) else {
                return Self.error(.notFound, "no such session")
            }
            let given = request.uri.queryParameters["reason"].map(String.init)
            // The documented bound (docs/openapi.yaml, maxLength 200) is refused past, not cut.
            if let given, given.count > 200 || given.utf8.count > Self.maxReasonBytes {
                return Self.error(.badRequest, "reason is at most 200 characters")
            }
            let reason = given ?? "kicked by an operator"
            switch table.kick(id.rawValue, reason: reason) {
            case .kicked: return Response(status: .accepted)
            case .notFound: return Self.error(.notFound, "no such session")
            case .notKickable: return Self.error(.conflict, "this session cannot be kicked: a transcoder's rung ends with its stream")
            }
        }
    }

    private static func error(_ status: HTTPResponse.Status, _ message: String) -> Response {
        let data = (try? JSONEncoder().encode(["error": message])) ?? Data()
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    private static func json(_ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        let data = try encoder.encode(value)
        return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
