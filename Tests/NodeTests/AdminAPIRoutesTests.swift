import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing
import Yams

@testable import Node

/// The admin API's HTTP side: the generated server behind the bearer token, the document's
/// paths and methods, bounded bodies and the errors as the document lists them; on a node
/// that serves none of the cluster's operations. (schemathesis drives a whole node:
/// `AdminAPIConformanceTests`.)
struct AdminAPIRoutesTests {
    static let token = "s3cret-token"
    static var authorized: HTTPFields { [.authorization: "Bearer \(token)"] }

    static func application() throws -> some ApplicationProtocol {
        let router = Router(context: NodeRequestContext.self)
        let drain = NodeDrain(logger: Logger(label: "admin-api-tests"))
        let api = NodeAdminAPI(
            coordinator: nil, sessions: nil, drain: drain,
            drainDefaults: .init(grace: .seconds(8), reconnectTo: nil, reason: "SIGTERM"), forwards: nil, pulls: nil
        )
        try AdminAPIRoutes.register(api, on: router, token: token, logger: Logger(label: "admin-api-tests"))
        return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    }

    static func error(_ buffer: ByteBuffer) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(buffer.readableBytesView)) as? [String: Any])?["error"] as? String
    }

    @Test func theMethodTableIsTheDocumentsPaths() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
        let document = try #require(try Yams.load(yaml: text) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        let verbs: Set<String> = ["get", "put", "post", "delete", "patch", "head", "options", "trace"]
        var documented: [String: Set<String>] = [:]
        for (path, item) in paths {
            documented[path] = Set(item.keys.filter(verbs.contains).map { $0.uppercased() })
        }
        let table = AdminAPIRoutes.methods.mapValues { Set($0.map(\.rawValue)) }
        #expect(table == documented)
    }

    @Test(arguments: [nil, "Bearer wrong", "Bearer s3cret-token2", "Basic s3cret-token", "Bearer", "s3cret-token"])
    func requestsWithoutTheTokenAreRefused(_ authorization: String?) async throws {
        var headers: HTTPFields = [:]
        if let authorization { headers[.authorization] = authorization }
        let presented = headers
        try await Self.application().test(.live) { client in
            for (path, methods) in AdminAPIRoutes.methods {
                let uri = path.replacingOccurrences(of: "{id}", with: "1").replacingOccurrences(of: "{app}", with: "live")
                    .replacingOccurrences(of: "{name}", with: "cam")
                for method in methods {
                    try await client.execute(uri: uri, method: method, headers: presented) { response in
                        #expect(response.status == .unauthorized, "\(method) \(uri)")
                        #expect(response.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true)
                        #expect(Self.error(response.body)?.isEmpty == false)
                    }
                }
            }
        }
    }

    @Test func operationsThisNodeDoesNotServeSaySo() async throws {
        try await Self.application().test(.live) { client in
            for uri in ["/api/v1/nodes", "/api/v1/streams", "/api/v1/keys", "/api/v1/streams/live/cam", "/api/v1/nodes/n1/streams"] {
                try await client.execute(uri: uri, method: .get, headers: Self.authorized) { response in
                    #expect(response.status == .notFound, "\(uri)")
                    #expect(Self.error(response.body)?.contains("runs no coordinator") == true, "\(uri)")
                }
            }
            try await client.execute(uri: "/api/v1/sessions", method: .get, headers: Self.authorized) { response in
                #expect(response.status == .notFound)
                #expect(Self.error(response.body)?.contains("no listener") == true)
            }
            for uri in ["/api/v1/forwards", "/api/v1/pulls"] {
                try await client.execute(uri: uri, method: .get, headers: Self.authorized) { response in
                    #expect(response.status == .notFound, "\(uri)")
                    #expect(Self.error(response.body)?.contains("takes no publishers") == true, "\(uri)")
                }
            }
            try await client.execute(uri: "/api/v1/node/drain", method: .get, headers: Self.authorized) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.cacheControl] == "no-store")
                #expect(String(buffer: response.body).contains(#""draining":false"#))
            }
        }
    }

    @Test func methodsTheDocumentDoesNotListAre405WithAllow() async throws {
        try await Self.application().test(.live) { client in
            let cases: [(HTTPRequest.Method, String, String)] = [
                (.put, "/api/v1/nodes", "GET"), (.delete, "/api/v1/streams", "GET"), (.get, "/api/v1/keys/7", "DELETE"),
                (.head, "/api/v1/nodes", "GET"), (.patch, "/api/v1/node/drain", "GET, POST"),
                (HTTPRequest.Method("QUERY")!, "/api/v1/sessions/v-0000000000000001", "DELETE, GET"),
            ]
            for (method, uri, allow) in cases {
                try await client.execute(uri: uri, method: method, headers: Self.authorized) { response in
                    #expect(response.status == .methodNotAllowed, "\(method) \(uri)")
                    #expect(response.headers[.allow] == allow, "\(method) \(uri)")
                }
            }
            // A path outside the document is the router's 404, whatever the method.
            try await client.execute(uri: "/api/v1/elsewhere", method: .put, headers: Self.authorized) { response in
                #expect(response.status == .notFound)
            }
        }
    }

    @Test func bodiesAreJSONBoundedAndOptionalWhereTheDocumentSaysSo() async throws {
        try await Self.application().test(.live) { client in
            let drain = "/api/v1/node/drain"
            var json = Self.authorized
            json[.contentType] = "application/json"
            let big = ByteBuffer(string: #"{"reconnectTo": ""# + String(repeating: "a", count: 20_000) + #""}"#)
            try await client.execute(uri: drain, method: .post, headers: json, body: big) { response in
                #expect(response.status == .contentTooLarge)
                #expect(Self.error(response.body)?.contains("16384") == true)
            }
            var form = Self.authorized
            form[.contentType] = "application/x-www-form-urlencoded"
            try await client.execute(uri: drain, method: .post, headers: form, body: ByteBuffer(string: #"{"graceSeconds": 1}"#)) { response in
                #expect(response.status == .unsupportedMediaType)
            }
            for body in ["not json", #"{"graceSeconds": "soon"}"#, #"{"graceSeconds": -1}"#, #"{"graceSeconds": 1e9}"#, #"{"reconnectTo": "http://x"}"#] {
                try await client.execute(uri: drain, method: .post, headers: json, body: ByteBuffer(string: body)) { response in
                    #expect(response.status == .badRequest, "\(body)")
                    #expect(Self.error(response.body)?.isEmpty == false, "\(body)")
                }
            }
            // No body: the configuration's drain; then a second is refused with the first's state.
            try await client.execute(uri: drain, method: .post, headers: Self.authorized) { response in
                #expect(response.status == .accepted)
                let text = String(buffer: response.body)
                #expect(text.contains(#""draining":true"#) && text.contains(#""graceSeconds":8"#) && text.contains(#""reason":"admin API""#), "\(text)")
            }
            try await client.execute(uri: drain, method: .post, headers: json, body: ByteBuffer(string: #"{"graceSeconds": 1}"#)) { response in
                #expect(response.status == .conflict)
            }
        }
    }
}
