import AdminAPI
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import OpenAPIHummingbird
import OpenAPIRuntime

/// Puts the generated admin API (`NodeAdminAPI`) on the admin plane's router, under the
/// document's paths (`/api/v1/…`):
///
/// - every operation behind the bearer token (`BearerTokenMiddleware`);
/// - request bodies read up to 16 KiB (413 past that), and an empty body given as none, so
///   that a `POST /api/v1/node/drain` without one takes the configuration's drain;
/// - what the generated server refuses (a malformed body, a query value outside its enum)
///   answered as the document's errors, `{"error": …}` (`AdminAPIErrors`);
/// - a method the document does not list for a path answered 405 with `Allow`.
enum AdminAPIRoutes {
    /// The largest request body read; the API's bodies are a few dozen bytes.
    static let maxRequestBytes = 16 * 1024

    /// The document's paths and their methods (`AdminAPIRoutesTests` holds it to
    /// docs/openapi.yaml).
    static let methods: [String: Set<HTTPRequest.Method>] = [
        "/api/v1/nodes": [.get],
        "/api/v1/nodes/{id}/streams": [.get],
        "/api/v1/streams": [.get],
        "/api/v1/streams/{app}/{name}": [.get],
        "/api/v1/streams/{app}/{name}/kick": [.post],
        "/api/v1/forwards": [.get],
        "/api/v1/pulls": [.get],
        "/api/v1/node/drain": [.get, .post],
        "/api/v1/sessions": [.get],
        "/api/v1/sessions/{id}": [.get, .delete],
        "/api/v1/keys": [.get, .post],
        "/api/v1/keys/{id}": [.delete],
    ]

    static func register(_ api: NodeAdminAPI, on router: Router<NodeRequestContext>, token: String?, logger: Logger) throws {
        // Router middleware also runs where no route matches: any method (QUERY, TRACE, …) on
        // a path of the document is answered.
        router.add(middleware: AdminAPIMethods())
        let guarded = router.group()
            .add(middleware: AdminAPIErrors(logger: logger))
            .add(middleware: BearerTokenMiddleware<NodeRequestContext>(token: token ?? ""))
        // One line per answer, keys sorted: stable output for operators' scripts and diffs.
        try api.registerHandlers(
            on: AdminAPITransport(routes: guarded),
            configuration: Configuration(jsonEncodingOptions: [.sortedKeys, .withoutEscapingSlashes])
        )
    }
}

/// Answers 405 with `Allow` to a method the document does not list for a path of it.
/// OPTIONS is left to CORS's preflight; HEAD is refused like any other (the API's answers
/// are small JSON bodies, asked for with GET).
struct AdminAPIMethods: RouterMiddleware {
    typealias Context = NodeRequestContext
    private let templates: [(segments: [Substring], path: String, allowed: Set<HTTPRequest.Method>)] =
        AdminAPIRoutes.methods.map { (path, allowed) in (path.split(separator: "/"), path, allowed) }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.method != .options, request.uri.path.hasPrefix("/api/"),
              let match = Self.template(for: request.uri.path, in: templates), !match.allowed.contains(request.method)
        else {
            return try await next(request, context)
        }
        let allow = match.allowed.map(\.rawValue).sorted().joined(separator: ", ")
        var response = AdminAPIErrors.response(.methodNotAllowed, "\(request.method.rawValue) is not an operation of \(match.path): \(allow)")
        response.headers[.allow] = allow
        return response
    }

    /// The document's path whose segments match `path`'s, `{…}` matching any one.
    static func template(
        for path: String, in templates: [(segments: [Substring], path: String, allowed: Set<HTTPRequest.Method>)]
    ) -> (path: String, allowed: Set<HTTPRequest.Method>)? {
        let segments = path.split(separator: "/")
        for template in templates where template.segments.count == segments.count {
            let matches = zip(template.segments, segments).allSatisfy { pattern, segment in
                pattern.hasPrefix("{") || pattern == segment
            }
            if matches { return (template.path, template.allowed) }
        }
        return nil
    }
}

/// The generated server's transport: Hummingbird's (swift-openapi-hummingbird), with each
/// request body read, bounded, before the generated code decodes it (its own read is
/// unbounded).
struct AdminAPITransport: ServerTransport {
    let routes: RouterGroup<NodeRequestContext>

    func register(
        _ handler: @escaping @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?),
        method: HTTPRequest.Method,
        path: String
    ) throws {
        routes.register({ request, body, metadata in
            var bounded: HTTPBody?
            if let body {
                var bytes = Data()
                for try await chunk in body {
                    guard bytes.count + chunk.count <= AdminAPIRoutes.maxRequestBytes else {
                        throw HTTPError(.contentTooLarge, message: "the body is over \(AdminAPIRoutes.maxRequestBytes) bytes")
                    }
                    bytes.append(contentsOf: chunk)
                }
                bounded = bytes.isEmpty ? nil : HTTPBody(bytes)
            }
            return try await handler(request, bounded, metadata)
        }, method: method, path: path)
    }
}

/// Errors of the API as the document lists them: `{"error": …}` with the status the
/// generated server chose (400 for a malformed request), 413 for a body over the bound, and
/// 500, logged, for a failure of the node's own. Every answer is `Cache-Control: no-store`:
/// sessions and keys are not for a proxy to keep.
struct AdminAPIErrors: RouterMiddleware {
    typealias Context = NodeRequestContext
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            var response = try await next(request, context)
            response.headers[.cacheControl] = "no-store"
            return response
        } catch let error as ServerError {
            if let http = error.underlyingError as? HTTPError { return Self.response(http.status, http.body ?? http.status.reasonPhrase) }
            guard error.httpStatus.code < 500 else {
                logger.error("admin API \(error.operationID) failed: \(error.underlyingError)")
                return Self.response(error.httpStatus, "the node failed to answer (its log says why)")
            }
            return Self.response(error.httpStatus, "malformed request: \(Self.plain(error.underlyingError))")
        } catch let error as HTTPError {
            return Self.response(error.status, error.body ?? error.status.reasonPhrase)
        } catch {
            logger.error("admin API \(request.method) \(request.uri.path) failed: \(error)")
            return Self.response(.internalServerError, "the node failed to answer (its log says why)")
        }
    }

    /// A decoding error's description, cut to one line of at most 300 characters.
    static func plain(_ error: any Error) -> String {
        let text: String
        if case let DecodingError.dataCorrupted(context) = error {
            text = context.debugDescription
        } else if case let DecodingError.keyNotFound(key, _) = error {
            text = "\(key.stringValue) is required"
        } else if case let DecodingError.typeMismatch(type, context) = error {
            text = "\(context.codingPath.map(\.stringValue).joined(separator: ".")): expected \(type)"
        } else if case let DecodingError.valueNotFound(type, context) = error {
            text = "\(context.codingPath.map(\.stringValue).joined(separator: ".")): expected \(type)"
        } else {
            text = String(describing: error)
        }
        // The generated types' names (`_ProtocolPayload`) mean nothing to a client.
        let named = text.replacingOccurrences(of: #"\b_?([A-Za-z]+)Payload\b"#, with: "$1", options: .regularExpression)
        return String(named.split(whereSeparator: \.isNewline).joined(separator: " ").prefix(300))
    }

    static func response(_ status: HTTPResponse.Status, _ message: String) -> Response {
        let data = (try? JSONEncoder().encode(["error": message])) ?? Data()
        return Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: data))
        )
    }
}
