import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import Media

/// The pipelines' subscription (`FrameSubscription`): frames, not bytes, in hub order,
/// starting with what a new viewer gets; bounded; never a viewer.
@Suite struct FrameSubscriptionTests {
    typealias Hub = StreamHubTests

    func makeAttachedHub(queueBytes: Int = 1 << 20) throws -> StreamHub {
        var configuration = HubConfiguration()
        configuration.subscriberQueueBytes = queueBytes
        let hub = StreamHubTests().makeHub(configuration)
        try StreamHubTests().attach(hub)
        return hub
    }

    /// The GOP a late pipeline joins with, as a viewer would: metadata, records, the cache.
    static let gop: [MediaFrame] = [
        Hub.metadata(), Hub.audioSequenceHeader(), Hub.videoSequenceHeader(),
        Hub.video(0, keyframe: true), Hub.audio(10), Hub.video(33, keyframe: false),
    ]

    static func timeline(_ frames: [MediaFrame]) -> [String] {
        frames.map { "\($0.kind)\($0.isSequenceHeader ? "-config" : "")@\($0.timestamp)" }
    }

    @Test func inlineDeliveryHandsOverEachBurstOnThePublishersThread() throws {
        let hub = try makeAttachedHub()
        for frame in Self.gop { hub.publish(frame, publisher: 1) }
        let received = NIOLockedValueBox<[FrameSubscription.Batch]>([])
        let subscription = try #require(FrameSubscription.start(on: hub, delivery: .inline { batch in
            received.withLockedValue { $0.append(batch) }
        }))
        // Joining delivers the start frames at once, before `start` returns.
        #expect(received.withLockedValue { $0.map { Self.timeline($0.frames) } } == [Self.timeline(Self.gop)])
        hub.publish(Hub.video(66, keyframe: false), publisher: 1)
        hub.publish(Hub.audio(70), publisher: 1)
        hub.flush(force: true)
        #expect(received.withLockedValue { $0.count } == 2)
        #expect(received.withLockedValue { Self.timeline($0[1].frames) } == ["video@66", "audio@70"])
        // A pipeline is a subscriber, never a viewer.
        #expect(hub.statistics.subscribers == 1)
        #expect(hub.statistics.viewers == 0)
        hub.end()
        #expect(received.withLockedValue { $0.last?.ended } == true)
        subscription.cancel()
        #expect(hub.statistics.subscribers == 0)
    }

    /// Issue 23: a transcoder's feed keeps an on-demand hub (a bus mirror) open without
    /// being counted as a viewer; the HLS segmenter's subscription does neither.
    @Test func aPipelineThatStandsForConsumersElsewhereHoldsTheHub() throws {
        let hub = try makeAttachedHub()
        let segmenter = try #require(FrameSubscription.start(on: hub, delivery: .inline { _ in }))
        #expect(hub.statistics.holders == 0)
        let feed = try #require(FrameSubscription.start(on: hub, delivery: .inline { _ in }, keepsStreamOpen: true))
        #expect(hub.statistics.holders == 1)
        #expect(hub.statistics.viewers == 0)
        let edge = try #require(FrameSubscription.start(on: hub, delivery: .inline { _ in }, countsAsViewer: true))
        #expect(hub.statistics.holders == 2, "a viewer always holds")
        #expect(hub.statistics.viewers == 1)
        feed.cancel()
        edge.cancel()
        #expect(hub.statistics.holders == 0)
        segmenter.cancel()
        hub.end()
        #expect(hub.statistics.holders == 0)
    }

    @Test func wakeDeliveryQueuesUntilDrainedAndKeepsTheByteBound() throws {
        let hub = try makeAttachedHub(queueBytes: 1000)
        for frame in Self.gop { hub.publish(frame, publisher: 1) }
        let drains = NIOLockedValueBox<[@Sendable () -> FrameSubscription.Batch]>([])
        let subscription = try #require(FrameSubscription.start(on: hub, delivery: .wake { drain in
            drains.withLockedValue { $0.append(drain) }
        }))
        // Woken once, and not again until it drains.
        for timestamp in stride(from: Int64(40), to: 240, by: 40) {
            hub.publish(Hub.video(timestamp, keyframe: false, size: 300), publisher: 1)
        }
        hub.flush(force: true)
        #expect(drains.withLockedValue { $0.count } == 1)
        // 5 × 300 bytes of inter frames overflowed the 1000-byte bound: the queue kept the
        // configuration records and now waits for a keyframe.
        hub.publish(Hub.video(240, keyframe: true, size: 300), publisher: 1)
        let drain = try #require(drains.withLockedValue { $0.first })
        let batch = drain()
        #expect(subscription.statistics.skips >= 1)
        #expect(!batch.frames.contains { $0.kind == .video && !$0.isSequenceHeader && !$0.isKeyframe })
        #expect(batch.frames.last.map { $0.isKeyframe && $0.timestamp == 240 } == true)
        #expect(batch.frames.contains { $0.kind == .script })
        subscription.cancel()
    }

    @Test func anEndedHubStartsNothing() throws {
        let hub = try makeAttachedHub()
        hub.end()
        let called = NIOLockedValueBox(false)
        #expect(FrameSubscription.start(on: hub, delivery: .inline { _ in called.withLockedValue { $0 = true } }) == nil)
        #expect(!called.withLockedValue { $0 })
        #expect(hub.startFrames().isEmpty)
    }

    /// What a bus GOP request is answered with, without subscribing: what a new viewer gets.
    @Test func startFramesAreWhatANewSubscriberReceives() throws {
        let hub = try makeAttachedHub()
        for frame in Self.gop + [Hub.video(66, keyframe: true), Hub.audio(70)] { hub.publish(frame, publisher: 1) }
        let viewer = HubSubscriber(format: .flvTag, maxQueueBytes: 1 << 20) { _ in }
        hub.subscribe(viewer)
        let expected = Self.timeline(viewer.drain().packets.map(\.frame))
        #expect(Self.timeline(hub.startFrames()) == expected)
        #expect(expected == ["script@0", "audio-config@0", "video-config@0", "video@66", "audio@70"])
        #expect(hub.statistics.viewers == 1)
    }
}
