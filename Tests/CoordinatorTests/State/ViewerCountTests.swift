import Cluster
import Foundation
import Testing

@testable import Coordinator

/// Viewers per relay: a relay reports each hub it plays, a rung's too
/// (`cam_720p`); the coordinator, which knows the ladders, counts them for the stream.
struct ViewerCountTests {
    @Test func aRungsPlayersCountForItsStream() async throws {
        let fixture = try await CoordinatorFixture()
        try await fixture.register("ingest-1", .ingest)
        try await fixture.register("relay-1", .relay)
        try await fixture.register("relay-2", .relay)
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "cam", ingestNode: "ingest-1", facts: .sample))

        _ = try await fixture.state.heartbeat(nodeID: "relay-1", load: 0, streams: [
            .playing(app: "live", name: "cam", viewers: 1),
            .playing(app: "live", name: "cam_720p", viewers: 2),
            .playing(app: "live", name: "cam_480p", viewers: 4),
        ])
        // relay-2 plays only a rung: the stream's entry is made for it.
        _ = try await fixture.state.heartbeat(nodeID: "relay-2", load: 0, streams: [
            .playing(app: "live", name: "cam_480p", viewers: 5),
            // Not a rung of live's ladder: a stream of its own name.
            .playing(app: "live", name: "cam_1080p", viewers: 7),
        ])
        let streams = try await fixture.state.liveStreams()
        let cam = try #require(streams.first { $0.name == "cam" })
        #expect(cam.viewers == ["relay-1": 7, "relay-2": 5])
        #expect(cam.totalViewers == 12)

        #expect(await fixture.state.foldingRungViewers([
            .transcoding(app: "live", name: "cam_720p", rungs: ["x"]),
        ]) == [.transcoding(app: "live", name: "cam_720p", rungs: ["x"])])
        try await fixture.close()
    }
}
