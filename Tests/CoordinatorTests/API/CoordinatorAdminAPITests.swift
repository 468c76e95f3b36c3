import AdminAPI
import Cluster
import Foundation
import Testing

@testable import Coordinator

/// The cluster's operations of the admin API, as the generated server hands them their
/// inputs and takes their outputs. The HTTP side (paths, the bearer token, malformed
/// requests) is the node's: `AdminAPIRoutesTests`, and schemathesis against a running node.
struct CoordinatorAdminAPITests {
    @Test func nodesAndStreamsAreListedWithTheirFacts() async throws {
        let fixture = try await CoordinatorFixture()
        try await fixture.register("ingest-1", .ingest)
        try await fixture.register("tc-1", .transcode)
        try await fixture.register("relay-1", .relay)
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam", ingestNode: "ingest-1", facts: .sample))
        _ = try await fixture.state.heartbeat(nodeID: "relay-1", load: 0.25, streams: [.playing(app: "live", name: "cam", viewers: 12)])
        fixture.clock.advance(by: 2)
        let api = CoordinatorAdminAPI(state: fixture.state)

        let nodes = try await api.listNodes().ok.body.json.nodes
        #expect(nodes.map(\.id) == ["ingest-1", "relay-1", "tc-1"])
        #expect(nodes.first { $0.id == "tc-1" }?.transcodeJobs == 1)
        #expect(nodes.first { $0.id == "relay-1" }?.load == 0.25)
        #expect(nodes.first { $0.id == "relay-1" }?.role == .relay)
        #expect(nodes.allSatisfy { $0.state == .alive })

        let stream = try #require(try await api.listStreams().ok.body.json.streams.first)
        #expect(stream.app == "live" && stream.name == "cam")
        #expect(stream.ingestNode == "ingest-1")
        #expect(stream.uptimeSeconds == 2)
        #expect(stream.viewers.additionalProperties == ["relay-1": 12])
        #expect(stream.totalViewers == 12)
        #expect(stream.facts.container == "flv")
        #expect(stream.facts.videoCodec == "h264")
        #expect(stream.facts.videoProfile == "High")
        #expect(stream.facts.width == 1920 && stream.facts.height == 1080)
        #expect(stream.facts.frameRate == 29.97)
        #expect(stream.facts.audioSampleRate == 44_100 && stream.facts.audioChannels == 2)
        #expect(stream.renditions.map(\.rung) == ["720p", "480p"])
        #expect(stream.renditions.allSatisfy { $0.transcoderNode == "tc-1" })

        let detail = try await api.getStream(.init(path: .init(app: "live", name: "cam"))).ok.body.json
        #expect(detail.stream.id == stream.id)
        #expect(try await api.getStream(.init(path: .init(app: "live", name: "other"))).notFound.body.json.error.contains("not live"))
        #expect(try await api.getStream(.init(path: .init(app: "li ve", name: "cam"))).badRequest.body.json.error == "invalid stream path")
        #expect(try await api.nodeStreams(.init(path: .init(id: "nowhere"))).notFound.body.json.error == "no node nowhere")
        try await fixture.close()
    }

    @Test func keysAreCreatedOnceListedWithoutSecretsAndRevoked() async throws {
        let fixture = try await CoordinatorFixture()
        let state = fixture.state
        let api = CoordinatorAdminAPI(state: state)
        let created = try await api.createStreamKey(.init(body: .json(.init(app: "live", name: "cam")))).created.body.json
        #expect(created.key.count == 43)
        #expect(try await state.verifyStreamKey(app: "live", name: "cam", key: created.key))

        let keys = try await api.listStreamKeys().ok.body.json.keys
        #expect(keys.map(\.id) == [created.id])
        #expect(keys.first?.revokedAt == nil)
        // The listing has no field for a secret: its JSON cannot carry the key.
        let listed = String(decoding: try JSONEncoder().encode(keys), as: UTF8.self)
        #expect(!listed.contains(created.key))

        _ = try await api.revokeStreamKey(.init(path: .init(id: created.id))).noContent
        #expect(try await !state.verifyStreamKey(app: "live", name: "cam", key: created.key))
        #expect(try await api.listStreamKeys().ok.body.json.keys.first?.revokedAt != nil)
        #expect(try await api.revokeStreamKey(.init(path: .init(id: created.id + 100))).notFound.body.json.error == "no key \(created.id + 100)")
        for (app, name) in [("li ve", "cam"), (".x", "cam"), ("live", "")] {
            let refusal = try await api.createStreamKey(.init(body: .json(.init(app: app, name: name)))).badRequest.body.json.error
            #expect(refusal == "invalid stream path", "\(app)/\(name)")
        }
        #expect(try await fixture.state.streamKeys().count == 1)
        try await fixture.close()
    }

    @Test func aKickIsAcceptedAndDeliveredToTheIngest() async throws {
        let fixture = try await CoordinatorFixture()
        try await fixture.register("ingest-1", .ingest)
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam", ingestNode: "ingest-1"))
        let api = CoordinatorAdminAPI(state: fixture.state)
        let accepted = try await api.kickPublisher(.init(path: .init(app: "live", name: "cam"))).accepted.body.json
        #expect(accepted.app == "live" && accepted.name == "cam")
        _ = try await api.kickPublisher(.init(path: .init(app: "live", name: "other"))).notFound
        let reports = [StreamReport.publishing(app: "live", name: "cam", facts: StreamFacts())]
        #expect(try await fixture.state.heartbeat(nodeID: "ingest-1", load: 0, streams: reports).instructions == [.kick(app: "live", name: "cam")])
        #expect(try await fixture.state.events().contains { $0.kind == "stream.kicked" && $0.subject == "live/cam" })
        try await fixture.close()
    }

    @Test func aKickReasonOverItsBoundIsRefusedNotCut() async throws {
        let fixture = try await CoordinatorFixture()
        let api = CoordinatorAdminAPI(state: fixture.state)
        let long = String(repeating: "x", count: 201)
        #expect(try await api.kickSession(.init(path: .init(id: "v-0000000000000001"), query: .init(reason: long))).badRequest.body.json.error
            == "reason is at most 200 characters")
        _ = try await api.kickSession(.init(path: .init(id: "v-0000000000000001"), query: .init(reason: "bye"))).notFound
        _ = try await api.getSession(.init(path: .init(id: "nonsense"))).notFound
        try await fixture.close()
    }
}
