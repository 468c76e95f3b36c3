import Logging
import Media
import NIOCore
import Synchronization
import Testing

@testable import Edge

/// `estuary://` upstreams: the cluster's stream, mirrored by the cluster's source into a
/// registry of the edge's own, read into the edge's hub (`HubFeed`).
struct ClusterUpstreamTests {
    /// Stands for the bus: opens a stream by publishing into the registry it is given.
    final class MirrorSource: RemoteStreamSource {
        let mirrored = Mutex<(StreamHub, StreamHub.PublisherID)?>(nil)
        let known: StreamPath

        init(known: StreamPath) {
            self.known = known
        }

        func open(_ path: RenditionPath, registry: StreamRegistry) async -> StreamHub? {
            guard path == .source(known) else { return nil }
            let (hub, publisher) = await registry.hubForPublishing(path)
            guard case .attached = hub.attachPublisher(id: publisher, evict: {}) else { return nil }
            mirrored.withLock { $0 = (hub, publisher) }
            return hub
        }

        func touch(_ path: RenditionPath) {}

        func publish(_ timestamp: Int64) {
            guard let (hub, publisher) = mirrored.withLock({ $0 }) else { return }
            let frame = MediaFrame(kind: .video, timestamp: timestamp, isKeyframe: timestamp == 0, payload: ByteBuffer(bytes: [timestamp == 0 ? 0x17 : 0x27, 1, 0, 0, 0, 0, 0, 0, 1, 0x65]))
            _ = hub.publish(frame, publisher: publisher)
            hub.flush(force: true)
        }
    }

    @Test func anEstuaryUpstreamFeedsTheEdgesHubFromTheCluster() async throws {
        let path = try StreamPath(app: "live", name: "cam")
        let cluster = MirrorSource(known: path)
        let source = EdgeStreamSource(upstreams: [try Upstream("estuary://cluster")], cluster: cluster, logger: Logger(label: "edge-tests"))
        let registry = StreamRegistry(serializers: [])
        await registry.setRemoteSource(source)
        let hub = try #require(await registry.resolve(path))
        let received = Mutex<[Int64]>([])
        let subscription = try #require(FrameSubscription.start(on: hub, delivery: .inline { batch in
            received.withLock { $0 += batch.frames.map(\.timestamp) }
        }))
        defer { subscription.cancel() }
        for index in 0..<5 {
            cluster.publish(Int64(index) * 33)
            try await Task.sleep(for: .milliseconds(50))
        }
        var waited = 0
        while received.withLock({ $0.count }) < 5, waited < 40 {
            try await Task.sleep(for: .milliseconds(50))
            waited += 1
        }
        #expect(received.withLock { $0 } == [0, 33, 66, 99, 132])
        let reports = source.pullReports()
        #expect(reports.map(\.upstream) == ["estuary://cluster"])
        #expect(reports.first?.path == .source(path))
        #expect(await registry.resolve(try StreamPath(app: "live", name: "unknown")) == nil, "a stream the cluster does not have")
    }

    @Test func withoutTheClusterBusAnEstuaryUpstreamHasNothing() async throws {
        let source = EdgeStreamSource(upstreams: [try Upstream("estuary://cluster")], logger: Logger(label: "edge-tests"))
        let registry = StreamRegistry(serializers: [])
        await registry.setRemoteSource(source)
        #expect(await registry.resolve(try StreamPath(app: "live", name: "cam")) == nil)
    }

    @Test func estuaryUpstreamsHaveNoPath() throws {
        let upstream = try Upstream("estuary://cluster")
        #expect(upstream.scheme == .estuary && upstream.description == "estuary://cluster")
        #expect(throws: Upstream.ParseError.malformed("estuary://cluster/live")) { try Upstream("estuary://cluster/live") }
    }
}
