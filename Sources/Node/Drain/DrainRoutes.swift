import Coordinator
import Foundation
import Hummingbird
import NIOCore

/// `GET` and `POST /api/v1/node/drain` on every node, behind the admin token: the drain's
/// state, and starting one. The body of a POST is optional:
/// `{"graceSeconds": 30, "reconnectTo": "rtmp://ingest-b:1935"}`, each defaulting to the
/// node's configuration (`drainGraceSeconds`, `drainReconnectTo`).
struct DrainRoutes {
    let drain: NodeDrain
    let defaults: NodeDrain.Request
    let adminToken: String?

    struct Body: Decodable {
        var graceSeconds: Double?
        var reconnectTo: String?
    }

    /// The most a drain may wait, whoever asks: a day.
    static let longestGrace: Double = 86_400

    func register(on router: Router<NodeRequestContext>) {
        let group = router.group("/api/v1/node")
            .add(middleware: BearerTokenMiddleware<NodeRequestContext>(token: adminToken ?? ""))
        let drain = drain
        group.get("/drain") { _, _ in
            try Self.json(drain.status(), status: .ok)
        }
        group.post("/drain") { request, _ -> Response in
            let bytes = try await request.body.collect(upTo: 4096)
            var ask = defaults
            ask.reason = "admin API"
            if bytes.readableBytes > 0 {
                guard let body = try? JSONDecoder().decode(Body.self, from: Data(bytes.readableBytesView)) else {
                    return Self.error("the body must be JSON: {\"graceSeconds\": 30, \"reconnectTo\": \"rtmp://host:1935\"}")
                }
                if let grace = body.graceSeconds {
                    guard grace.isFinite, (0...Self.longestGrace).contains(grace) else {
                        return Self.error("graceSeconds must be within 0…\(Int(Self.longestGrace))")
                    }
                    ask.grace = .milliseconds(Int64(grace * 1000))
                }
                if let target = body.reconnectTo {
                    do {
                        ask.reconnectTo = try DrainTarget.validated(target)
                    } catch {
                        return Self.error("reconnectTo: \(error)")
                    }
                }
            }
            let started = drain.begin(ask)
            return try Self.json(drain.status(), status: started ? .accepted : .conflict)
        }
    }

    private static func error(_ message: String) -> Response {
        let data = (try? JSONEncoder().encode(["error": message])) ?? Data()
        return Response(status: .badRequest, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    private static func json(_ status: NodeDrain.Status, status code: HTTPResponse.Status) throws -> Response {
        let data = try JSONEncoder().encode(status)
        return Response(status: code, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// The server URL a draining node sends publishers to.
enum DrainTarget {
    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    /// `rtmp://host[:port]` or `rtmps://…`, at most 512 bytes, without a trailing slash,
    /// query or user: the stream's application is appended to it.
    static func validated(_ url: String) throws(Invalid) -> String {
        let trimmed = url.hasSuffix("/") ? String(url.dropLast()) : url
        guard trimmed.utf8.count <= 512 else { throw Invalid(description: "longer than 512 bytes") }
        guard let components = URLComponents(string: trimmed), let scheme = components.scheme?.lowercased(),
              scheme == "rtmp" || scheme == "rtmps", let host = components.host, !host.isEmpty,
              components.query == nil, components.user == nil, components.fragment == nil
        else {
            throw Invalid(description: "'\(trimmed.prefix(80))' is not rtmp://host[:port]")
        }
        return trimmed
    }
}
