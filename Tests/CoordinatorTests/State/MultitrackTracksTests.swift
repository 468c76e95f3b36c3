import Cluster
import Foundation
import Testing

@testable import Coordinator

/// A multitrack publisher's encoder-made renditions, as its ingest reports them in its
/// heartbeat: kept with the stream (across a reopen) and named by `lookup`, for relays.
struct MultitrackTracksTests {
    @Test func reportedTracksAreInTheLookupCheckedAndKept() async throws {
        let fixture = try await CoordinatorFixture()
        try await fixture.register("ingest-1", .ingest)
        try await fixture.state.streamStarted(StreamStart(app: "live", name: "mt", ingestNode: "ingest-1", facts: .sample))
        #expect(try await fixture.state.lookup(app: "live", name: "mt")?.tracks == nil)

        var facts = StreamFacts.sample
        // Out of order, a duplicate, a name that is no path component, and a flood past the bound.
        facts.tracks = ["track2", "track1", "track2", "../x"] + (3...40).map { "track\($0)" }
        _ = try await fixture.state.heartbeat(nodeID: "ingest-1", load: 0, streams: [.publishing(app: "live", name: "mt", facts: facts, bytes: 100)])
        let tracks = try #require(try await fixture.state.lookup(app: "live", name: "mt")?.tracks)
        #expect(tracks.count <= StreamFacts.maxTracks && tracks.contains("track1") && tracks.contains("track2") && !tracks.contains("../x"))
        #expect(Set(tracks).count == tracks.count)

        try await fixture.reopen()
        #expect(try await fixture.state.lookup(app: "live", name: "mt")?.tracks == tracks)
        // The encoder stops sending its tracks: the next report says so.
        _ = try await fixture.state.heartbeat(nodeID: "ingest-1", load: 0, streams: [.publishing(app: "live", name: "mt", facts: .sample, bytes: 200)])
        #expect(try await fixture.state.lookup(app: "live", name: "mt")?.tracks == nil)
        try await fixture.close()
    }
}
