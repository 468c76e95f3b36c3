import Media
import NIOCore
import Synchronization
import Testing

@testable import Cluster

/// `Bus.hasSubscribers` and the publisher's skip: in one process nothing reads
/// `media.…`, and a frame nobody can receive is not encoded, while the sequence goes on.
struct MediaBusInterestTests {
    @Test func localBusKnowsItsSubscribersAndNATSStyleWildcardsCount() throws {
        let bus = LocalBus()
        #expect(!bus.hasSubscribers(to: "media.live.cam.src"))
        let wildcard = try bus.subscribe(subject: "media.live.*.src") { _ in }
        #expect(bus.hasSubscribers(to: "media.live.cam.src"))
        #expect(!bus.hasSubscribers(to: "media.live.cam.480p"))
        wildcard.cancel()
        #expect(!bus.hasSubscribers(to: "media.live.cam.src"))
        #expect(!bus.hasSubscribers(to: "not a subject"))
    }

    @Test func framesNobodyReadsAreSkippedAndTheSequenceGoesOn() throws {
        let bus = LocalBus()
        let subject = try MediaBusSubject(path: StreamPath(app: "live", name: "cam"), rendition: "src")
        let publisher = MediaBusPublisher(bus: bus, subject: subject, epoch: 7)
        for index in 0..<3 {
            try publisher.publish(Frames.video(timestamp: Int64(index) * 33, keyframe: index == 0))
        }
        #expect(bus.statistics.messagesOut == 0)

        let sequences = Mutex<[UInt64]>([])
        let subscription = try bus.subscribe(subject: subject.subject) { message in
            var payload = message.payload
            if let header = try? MediaBusFrameHeader(from: &payload) {
                sequences.withLock { $0.append(header.sequence) }
            }
        }
        try publisher.publish(Frames.video(timestamp: 99, keyframe: true))
        try publisher.publish(Frames.video(timestamp: 132, keyframe: false))
        // The three skipped frames used sequences 0–2: a late subscriber sees a gap, and
        // starts at a keyframe as it would anyway.
        #expect(sequences.withLock { $0 } == [3, 4])
        #expect(bus.statistics.messagesOut == 2)
        subscription.cancel()
    }
}
