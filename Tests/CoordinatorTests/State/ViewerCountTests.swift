import Cluster
import Foundation
import Testing

@testable import Coordinator

/// Viewers per relay: a relay reports each stream it plays, its rungs' players counted for
/// it (`RelayNode`); the coordinator adds up the relays, and takes a name as it comes: a
/// stream called `cam_480p` is not the 480p rung of `cam`.
struct ViewerCountTests {
    @Test func relaysViewersAddUpPerStreamAndANameEndingLikeARungIsAStreamOfItsOwn() async throws {
        let fixture = try await CoordinatorFixture()
        try await fixture.register("ingest-1", .ingest)
        try await fixture.register("relay-1", .relay)
        try await fixture.register("relay-2", .relay)
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam", ingestNode: "ingest-1", facts: .sample))
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam_480p", ingestNode: "ingest-1", facts: .sample))

        _ = try await fixture.state.heartbeat(nodeID: "relay-1", load: 0, streams: [
            .playing(app: "live", name: "cam", viewers: 7),
            .playing(app: "live", name: "cam_480p", viewers: 3),
        ])
        _ = try await fixture.state.heartbeat(nodeID: "relay-2", load: 0, streams: [
            .playing(app: "live", name: "cam", viewers: 5),
        ])
        let streams = try await fixture.state.liveStreams()
        let cam = try #require(streams.first { $0.name == "cam" })
        #expect(cam.viewers == ["relay-1": 7, "relay-2": 5])
        #expect(cam.totalViewers == 12)
        let lookalike = try #require(streams.first { $0.name == "cam_480p" })
        #expect(lookalike.viewers == ["relay-1": 3])
        #expect(lookalike.totalViewers == 3)
        try await fixture.close()
    }
}
