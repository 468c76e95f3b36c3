import Logging
import Media
import NIOCore
import Testing

@testable import Cluster

/// A publication's responder on the bus lives as long as its hub: an ended hub answers no
/// GOP request, and a subject with nobody on it is answered "no responders" at once, where
/// a silent subscriber would make the asker wait its whole timeout.
@Suite struct BusPublicationTests {
    @Test func anEndedHubsResponderGoesWithTheHub() async throws {
        let bus = LocalBus()
        let path = try StreamPath(app: "live", name: "ends")
        let registry = StreamRegistry(serializers: [])
        let (hub, publisher) = await registry.hubForPublishing(path)
        _ = hub.attachPublisher(id: publisher, evict: {})
        let publication = try BusPublication(
            hub: hub, bus: bus, logger: Logger(label: "test"), hasOwnClock: true, checks: PublisherChecks(node: 1, yielding: { false })
        )
        defer { publication.cancel() }
        for frame in [Frames.videoSequenceHeader(), Frames.video(timestamp: 0, keyframe: true), Frames.video(timestamp: 33, keyframe: false)] {
            _ = hub.publish(frame, publisher: publisher)
        }
        _ = hub.flush(force: true)
        let subject = try MediaBusSubject(.source(path))
        let gopSubject = MediaBusGOP.subject(for: subject)

        // Live: the GOP and another ingest's publisher check are answered.
        let gop = try MediaBusGOP.decode(try await bus.request(subject: gopSubject, payload: ByteBuffer(), timeout: .seconds(2)))
        #expect(gop.filter { $0.kind == .video && !$0.isSequenceHeader }.map(\.timestamp) == [0, 33])
        let check = try await bus.request(
            subject: MediaBusPublisherCheck.subject(for: subject), payload: MediaBusPublisherCheck.encodeRequest(owner: "address:elsewhere", asker: 2),
            timeout: .seconds(2)
        )
        #expect(MediaBusPublisherCheck.decode(check)?.verdict == .busy)

        hub.end()
        // Ended: nobody answers on the subject any more, and the asker is told at once.
        let asked = ContinuousClock.now
        await #expect(throws: BusError.noResponders(subject: gopSubject)) {
            _ = try await bus.request(subject: gopSubject, payload: ByteBuffer(), timeout: .seconds(2))
        }
        #expect(ContinuousClock.now - asked < .milliseconds(500), "an ended hub's responder made the asker wait")
    }

    /// A hub that ended before its publication could follow it: the responder goes at once.
    @Test func aHubThatEndedBeforeItsPublicationAnswersNothing() async throws {
        let bus = LocalBus()
        let path = try StreamPath(app: "live", name: "gone")
        let hub = StreamHub(path: .source(path), serializers: [])
        hub.end()
        let publication = try BusPublication(hub: hub, bus: bus, logger: Logger(label: "test"), hasOwnClock: true)
        defer { publication.cancel() }
        let gopSubject = MediaBusGOP.subject(for: try MediaBusSubject(.source(path)))
        await #expect(throws: BusError.noResponders(subject: gopSubject)) {
            _ = try await bus.request(subject: gopSubject, payload: ByteBuffer(), timeout: .seconds(2))
        }
    }
}
