import Cluster
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import Coordinator

/// The admin API through Hummingbird's router test framework, and once through a real
/// listening server.
struct AdminRoutesTests {
    static let token = "s3cret-token"

    static func application(_ state: CoordinatorState) -> some ApplicationProtocol {
        let router = Router()
        CoordinatorAdminRoutes(state: state, bearerToken: token).register(on: router)
        return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    }

    static var authorized: HTTPFields { [.authorization: "Bearer \(token)"] }

    static func json(_ buffer: ByteBuffer) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(buffer.readableBytesView))
        return try #require(object as? [String: Any])
    }

    @Test(arguments: [nil, "Bearer wrong", "Bearer s3cret-token2", "Basic s3cret-token", "Bearer", "s3cret-token"])
    func requestsWithoutTheTokenAreRefused(_ authorization: String?) async throws {
        let fixture = try await CoordinatorFixture()
        var headers: HTTPFields = [:]
        if let authorization { headers[.authorization] = authorization }
        let presented = headers
        try await Self.application(fixture.state).test(.router) { client in
            for (method, uri) in [(HTTPRequest.Method.get, "/api/v1/nodes"), (.get, "/api/v1/streams"), (.get, "/api/v1/keys"),
                                  (.post, "/api/v1/keys"), (.delete, "/api/v1/keys/1"), (.post, "/api/v1/streams/live/cam/kick")] {
                try await client.execute(uri: uri, method: method, headers: presented) { response in
                    #expect(response.status == .unauthorized, "\(method) \(uri)")
                    #expect(response.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true)
                }
            }
        }
        #expect(try await fixture.state.streamKeys().isEmpty)
        try await fixture.close()
    }

    @Test func anEmptyConfiguredTokenRefusesEverything() async throws {
        let fixture = try await CoordinatorFixture()
        let router = Router()
        CoordinatorAdminRoutes(state: fixture.state, bearerToken: "").register(on: router)
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/api/v1/nodes", method: .get, headers: [.authorization: "Bearer "]) { response in
                #expect(response.status == .unauthorized)
            }
        }
        try await fixture.close()
    }

    @Test func nodesAndStreamsAreListedWithTheirFacts() async throws {
        let fixture = try await CoordinatorFixture()
        try await fixture.register("ingest-1", .ingest)
        try await fixture.register("tc-1", .transcode)
        try await fixture.register("relay-1", .relay)
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam", ingestNode: "ingest-1", facts: .sample))
        _ = try await fixture.state.heartbeat(nodeID: "relay-1", load: 0.25, streams: [.playing(app: "live", name: "cam", viewers: 12)])
        fixture.clock.advance(by: 2)

        try await Self.application(fixture.state).test(.router) { client in
            try await client.execute(uri: "/api/v1/nodes", method: .get, headers: Self.authorized) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("application/json") == true)
                let nodes = try #require(try Self.json(response.body)["nodes"] as? [[String: Any]])
                #expect(nodes.compactMap { $0["id"] as? String } == ["ingest-1", "relay-1", "tc-1"])
                #expect(nodes.first { $0["id"] as? String == "tc-1" }?["transcodeJobs"] as? Int == 1)
                #expect(nodes.first { $0["id"] as? String == "relay-1" }?["load"] as? Double == 0.25)
                #expect(nodes.allSatisfy { $0["state"] as? String == "alive" })
            }
            try await client.execute(uri: "/api/v1/streams", method: .get, headers: Self.authorized) { response in
                #expect(response.status == .ok)
                let streams = try #require(try Self.json(response.body)["streams"] as? [[String: Any]])
                let stream = try #require(streams.first)
                #expect(stream["app"] as? String == "live" && stream["name"] as? String == "cam")
                #expect(stream["ingestNode"] as? String == "ingest-1")
                #expect(stream["uptimeSeconds"] as? Double == 2)
                #expect(stream["viewers"] as? [String: Int] == ["relay-1": 12])
                let facts = try #require(stream["facts"] as? [String: Any])
                #expect(facts["container"] as? String == "flv")
                #expect(facts["videoCodec"] as? String == "h264")
                #expect(facts["videoProfile"] as? String == "High")
                #expect(facts["width"] as? Int == 1920 && facts["height"] as? Int == 1080)
                #expect(facts["frameRate"] as? Double == 29.97)
                #expect(facts["audioSampleRate"] as? Int == 44_100 && facts["audioChannels"] as? Int == 2)
                let renditions = try #require(stream["renditions"] as? [[String: Any]])
                #expect(renditions.compactMap { $0["rung"] as? String } == ["720p", "480p"])
                #expect(renditions.allSatisfy { $0["transcoderNode"] as? String == "tc-1" })
                #expect((stream["startedAt"] as? String)?.hasSuffix("Z") == true)
            }
        }
        try await fixture.close()
    }

    @Test func keysAreCreatedOnceListedWithoutSecretsAndRevoked() async throws {
        let fixture = try await CoordinatorFixture()
        let state = fixture.state
        try await Self.application(state).test(.router) { client in
            let created = try await client.execute(
                uri: "/api/v1/keys", method: .post, headers: Self.authorized, body: ByteBuffer(string: #"{"app": "live", "name": "cam"}"#)
            ) { response in
                #expect(response.status == .created)
                return try JSONDecoder().decode(KeyCreated.self, from: Data(response.body.readableBytesView))
            }
            #expect(try await state.verifyStreamKey(app: "live", name: "cam", key: created.key))

            try await client.execute(uri: "/api/v1/keys", method: .get, headers: Self.authorized) { response in
                #expect(response.status == .ok)
                let text = String(buffer: response.body)
                #expect(!text.contains(created.key))
                let keys = try #require(try Self.json(response.body)["keys"] as? [[String: Any]])
                #expect(keys.count == 1)
                #expect(keys.first?["id"] as? Int64 == created.id)
                #expect(Set(keys.first?.keys.map { $0 } ?? []) == ["id", "app", "name", "createdAt"])
            }
            try await client.execute(uri: "/api/v1/keys/\(created.id)", method: .delete, headers: Self.authorized) { response in
                #expect(response.status == .noContent)
            }
            #expect(try await !state.verifyStreamKey(app: "live", name: "cam", key: created.key))
            try await client.execute(uri: "/api/v1/keys/\(created.id + 100)", method: .delete, headers: Self.authorized) { response in
                #expect(response.status == .notFound)
            }
            try await client.execute(uri: "/api/v1/keys/abc", method: .delete, headers: Self.authorized) { response in
                #expect(response.status == .badRequest)
            }
            for body in [#"{"app": "live"}"#, "not json", #"{"app": "li ve", "name": "cam"}"#, #"{"app": ".x", "name": "cam"}"#] {
                try await client.execute(uri: "/api/v1/keys", method: .post, headers: Self.authorized, body: ByteBuffer(string: body)) { response in
                    #expect(response.status == .badRequest, "\(body)")
                }
            }
        }
        #expect(try await fixture.state.streamKeys().count == 1)
        try await fixture.close()
    }

    @Test func aKickIsAcceptedAndDeliveredToTheIngest() async throws {
        let fixture = try await CoordinatorFixture()
        try await fixture.register("ingest-1", .ingest)
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam", ingestNode: "ingest-1"))
        // A real listening server on 127.0.0.1 this time.
        try await Self.application(fixture.state).test(.live) { client in
            try await client.execute(uri: "/api/v1/streams/live/cam/kick", method: .post, headers: Self.authorized) { response in
                #expect(response.status == .accepted)
            }
            try await client.execute(uri: "/api/v1/streams/live/other/kick", method: .post, headers: Self.authorized) { response in
                #expect(response.status == .notFound)
            }
        }
        let reports = [StreamReport.publishing(app: "live", name: "cam", facts: StreamFacts())]
        #expect(try await fixture.state.heartbeat(nodeID: "ingest-1", load: 0, streams: reports).instructions == [.kick(app: "live", name: "cam")])
        #expect(try await fixture.state.events().contains { $0.kind == "stream.kicked" && $0.subject == "live/cam" })
        try await fixture.close()
    }
}

/// The body of `POST /api/v1/keys`' answer, decoded as a client would.
private struct KeyCreated: Decodable {
    var id: Int64
    var key: String
}
