import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import Media

/// Fan-out behaviour of `StreamHub` and `HubSubscriber`, driven with real FLV tag bodies
/// (the AVC and AAC configuration records from the test vectors).
@Suite struct StreamHubTests {
    static let path = try! StreamPath(app: "live", name: "hub")  // literal, valid by construction

    /// Counts serialisations, to prove each frame is serialised once per format.
    final class CountingSerializer: FrameSerializer {
        let count = NIOLockedValueBox(0)
        var format: OutputFormat { .flvTag }
        func serialize(_ frame: MediaFrame, allocator: ByteBufferAllocator) -> ByteBuffer {
            count.withLockedValue { $0 += 1 }
            return FLVTagEncoder.encode(frame, allocator: allocator)
        }
    }

    static func videoSequenceHeader(timestamp: Int64 = 0) -> MediaFrame {
        MediaFrame(kind: .video, timestamp: timestamp, isKeyframe: true, isSequenceHeader: true, payload: ByteBuffer(hex: Vectors.avcHigh720TagBody))
    }

    static func audioSequenceHeader(timestamp: Int64 = 0) -> MediaFrame {
        MediaFrame(kind: .audio, timestamp: timestamp, isSequenceHeader: true, payload: ByteBuffer(hex: Vectors.aacLC44100StereoTagBody))
    }

    static func video(_ timestamp: Int64, keyframe: Bool, size: Int = 100) -> MediaFrame {
        var payload = ByteBuffer(bytes: [keyframe ? 0x17 : 0x27, 0x01, 0, 0, 0])
        payload.writeRepeatingByte(0xAB, count: size)
        return MediaFrame(kind: .video, timestamp: timestamp, isKeyframe: keyframe, payload: payload)
    }

    static func audio(_ timestamp: Int64) -> MediaFrame {
        MediaFrame(kind: .audio, timestamp: timestamp, payload: ByteBuffer(bytes: [0xAF, 0x01, 1, 2, 3, 4]))
    }

    static func metadata() -> MediaFrame {
        MediaFrame(kind: .script, timestamp: 0, payload: ByteBuffer(bytes: [0x02, 0x00, 0x0A] + Array("onMetaData".utf8) + [0x05]))
    }

    func makeHub(_ configuration: HubConfiguration = .init(), serializer: CountingSerializer = .init()) -> StreamHub {
        StreamHub(path: Self.path, serializers: [serializer], configuration: configuration)
    }

    func attach(_ hub: StreamHub, id: StreamHub.PublisherID = 1, now: NIODeadline = .uptimeNanoseconds(1_000_000_000)) throws {
        let result = hub.attachPublisher(id: id, now: now) {}
        #expect(result == .attached(replacedIdle: false))
    }

    @Test func lateJoinerGetsMetadataHeadersThenGOPStartingAtKeyframe() throws {
        let hub = makeHub()
        try attach(hub)
        for frame in [Self.metadata(), Self.audioSequenceHeader(), Self.videoSequenceHeader(),
                      Self.video(0, keyframe: true), Self.audio(10), Self.video(33, keyframe: false),
                      Self.video(66, keyframe: true), Self.audio(70), Self.video(100, keyframe: false)] {
            hub.publish(frame, publisher: 1)
        }
        let subscriber = HubSubscriber(format: .flvTag, maxQueueBytes: 1 << 20) { _ in }
        #expect(hub.subscribe(subscriber))
        let packets = subscriber.drain().packets
        let kinds = packets.map { ($0.frame.kind, $0.frame.isSequenceHeader, $0.frame.timestamp) }
        #expect(kinds.count == 6)
        #expect(kinds[0].0 == .script)
        #expect(kinds[1].0 == .audio && kinds[1].1)
        #expect(kinds[2].0 == .video && kinds[2].1)
        // The GOP starts at the last keyframe (66), not the first.
        #expect(packets[3].frame.isKeyframe && packets[3].frame.timestamp == 66)
        #expect(packets[4].frame.kind == .audio && packets[4].frame.timestamp == 70)
        #expect(packets[5].frame.timestamp == 100)
    }

    @Test func eachFrameIsSerialisedOnceAndSharedByAllSubscribers() throws {
        let serializer = CountingSerializer()
        let hub = makeHub(serializer: serializer)
        try attach(hub)
        let subscribers = (0..<50).map { _ in HubSubscriber(format: .flvTag, maxQueueBytes: 1 << 20) { _ in } }
        for subscriber in subscribers { hub.subscribe(subscriber) }
        hub.publish(Self.video(0, keyframe: true), publisher: 1)
        hub.publish(Self.audio(5), publisher: 1)
        #expect(serializer.count.withLockedValue { $0 } == 2)
        hub.flush(force: true)  // viewers get the frames at their wake-up
        let batches = subscribers.map { $0.drain().packets }
        let firstAddress = batches[0][0].bytes(for: .flvTag)?.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
        for batch in batches {
            #expect(batch.count == 2)
            let address = batch[0].bytes(for: .flvTag)?.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
            #expect(address == firstAddress, "every subscriber must get the same storage, not a copy")
        }
    }

    @Test func formatsWithoutSubscribersAreNotSerialisedUntilOneJoins() throws {
        let serializer = CountingSerializer()
        let hub = makeHub(serializer: serializer)
        try attach(hub)
        hub.publish(Self.video(0, keyframe: true), publisher: 1)
        hub.publish(Self.video(33, keyframe: false), publisher: 1)
        #expect(serializer.count.withLockedValue { $0 } == 0)
        let subscriber = HubSubscriber(format: .flvTag, maxQueueBytes: 1 << 20) { _ in }
        hub.subscribe(subscriber)
        #expect(serializer.count.withLockedValue { $0 } == 2)  // the cached GOP, filled in once
        let packets = subscriber.drain().packets
        #expect(packets.allSatisfy { $0.bytes(for: .flvTag) != nil })
    }

    @Test func overflowingSubscriberSkipsToNextKeyframeAndOthersAreUnaffected() throws {
        let hub = makeHub()
        try attach(hub)
        hub.publish(Self.videoSequenceHeader(), publisher: 1)
        let slow = HubSubscriber(format: .flvTag, maxQueueBytes: 1000) { _ in }
        let fast = HubSubscriber(format: .flvTag, maxQueueBytes: 1 << 20) { _ in }
        hub.subscribe(slow)
        hub.subscribe(fast)
        _ = slow.drain()
        _ = fast.drain()
        // 20 frames of ~120 bytes overflow the slow subscriber's 1000 bytes.
        hub.publish(Self.video(0, keyframe: true), publisher: 1)
        for index in 1..<20 { hub.publish(Self.video(Int64(index) * 33, keyframe: false), publisher: 1) }
        hub.flush(force: true)
        #expect(slow.statistics.skips == 1)
        #expect(slow.queuedBytes <= 1000)
        hub.publish(Self.video(700, keyframe: true), publisher: 1)
        hub.publish(Self.video(733, keyframe: false), publisher: 1)
        hub.flush(force: true)
        let slowPackets = slow.drain().packets
        // After the skip, delivery resumes exactly at the next keyframe.
        #expect(slowPackets.first?.frame.isKeyframe == true)
        #expect(slowPackets.first?.frame.timestamp == 700)
        #expect(slowPackets.count == 2)
        #expect(fast.drain().packets.count == 22)
        #expect(fast.statistics.skips == 0)
    }

    @Test func configurationRecordsSurviveAnOverflow() throws {
        let hub = makeHub()
        try attach(hub)
        let subscriber = HubSubscriber(format: .flvTag, maxQueueBytes: 600) { _ in }
        hub.subscribe(subscriber)
        hub.publish(Self.videoSequenceHeader(), publisher: 1)
        hub.publish(Self.video(0, keyframe: true), publisher: 1)
        for index in 1..<10 { hub.publish(Self.video(Int64(index) * 33, keyframe: false), publisher: 1) }
        hub.flush(force: true)
        let packets = subscriber.drain().packets
        #expect(subscriber.statistics.skips >= 1)
        #expect(packets.first?.frame.isSequenceHeader == true)
    }

    @Test func wakesOncePerBurstNotPerFrame() throws {
        let hub = makeHub()
        try attach(hub)
        let wakes = NIOLockedValueBox(0)
        let subscriber = HubSubscriber(format: .flvTag, maxQueueBytes: 1 << 20) { _ in wakes.withLockedValue { $0 += 1 } }
        hub.subscribe(subscriber)  // an empty hub: nothing to replay, no wake
        #expect(wakes.withLockedValue { $0 } == 0)
        let start = NIODeadline.uptimeNanoseconds(5_000_000_000)
        for index in 0..<10 { hub.publish(Self.audio(Int64(index) * 23), publisher: 1) }
        #expect(hub.flush(now: start) == nil)
        hub.flush(now: start)
        #expect(wakes.withLockedValue { $0 } == 1)
        #expect(subscriber.drain().packets.count == 10)
        // A burst inside the wake interval is deferred, with the delay until it is due …
        hub.publish(Self.audio(300), publisher: 1)
        #expect(hub.flush(now: start + .milliseconds(20)) == .milliseconds(80))
        #expect(wakes.withLockedValue { $0 } == 1)
        // … and picked up by the next flush after it, or a forced one.
        #expect(hub.flush(now: start + .milliseconds(100)) == nil)
        #expect(wakes.withLockedValue { $0 } == 2)
        hub.publish(Self.audio(330), publisher: 1)
        _ = subscriber.drain()
        hub.publish(Self.audio(360), publisher: 1)
        hub.flush(force: true, now: start + .milliseconds(110))
        #expect(wakes.withLockedValue { $0 } == 3)
    }

    /// The viewers' pending burst is bounded: once it holds as many bytes as a viewer's
    /// queue may, the next flush hands it over, inside the interval or not.
    @Test func aBurstAsLargeAsTheQueueBoundIsHandedOverWithinTheInterval() throws {
        var configuration = HubConfiguration()
        configuration.subscriberQueueBytes = 1000
        configuration.wakeInterval = .seconds(10)
        let hub = makeHub(configuration)
        try attach(hub)
        let viewer = HubSubscriber(format: .flvTag, maxQueueBytes: 1 << 20) { _ in }
        hub.subscribe(viewer)
        let start = NIODeadline.uptimeNanoseconds(30_000_000_000)  // past the first interval
        hub.publish(Self.video(0, keyframe: true), publisher: 1)
        #expect(hub.flush(now: start) == nil)
        #expect(viewer.drain().packets.count == 1)
        hub.publish(Self.audio(10), publisher: 1)
        #expect(hub.flush(now: start + .milliseconds(10)) != nil)
        #expect(viewer.drain().packets.isEmpty)
        for index in 1...12 { hub.publish(Self.video(Int64(index) * 33, keyframe: false), publisher: 1) }
        #expect(hub.flush(now: start + .milliseconds(20)) == nil)
        #expect(viewer.drain().packets.count == 13)
    }

    @Test func immediateSubscribersAreWokenEveryBurstWhileViewersCoalesce() throws {
        let hub = makeHub()
        try attach(hub)
        let viewerWakes = NIOLockedValueBox(0)
        let segmenterWakes = NIOLockedValueBox(0)
        let viewer = HubSubscriber(format: .flvTag, maxQueueBytes: 1 << 20) { _ in viewerWakes.withLockedValue { $0 += 1 } }
        let segmenter = HubSubscriber(format: nil, maxQueueBytes: 1 << 20, coalescesWakeUps: false) { _ in segmenterWakes.withLockedValue { $0 += 1 } }
        hub.subscribe(viewer)
        hub.subscribe(segmenter)
        let start = NIODeadline.uptimeNanoseconds(9_000_000_000)
        for burst in 0..<5 {
            hub.publish(Self.audio(Int64(burst) * 10), publisher: 1)
            hub.flush(now: start + .milliseconds(Int64(burst) * 10))
            _ = viewer.drain()
            _ = segmenter.drain()
        }
        #expect(segmenterWakes.withLockedValue { $0 } == 5)
        #expect(viewerWakes.withLockedValue { $0 } == 1)
    }

    /// Merged writes adapt to the node's load: no merging while it serves few viewers, the
    /// whole interval from `fullViewers` on, linear in between; every hub of the node
    /// counts its viewers into the one `WakeLoad`, and gives them back as they leave.
    @Test func theWakeIntervalGrowsWithTheNodesViewers() throws {
        let load = WakeLoad(lowViewers: 2, fullViewers: 6)
        var configuration = HubConfiguration()
        configuration.wakeLoad = load
        let hub = makeHub(configuration)
        let other = makeHub(configuration)
        try attach(hub)
        let wakes = NIOLockedValueBox(0)
        let viewers = (0..<3).map { _ in HubSubscriber(format: .flvTag, maxQueueBytes: 1 << 20) { _ in wakes.withLockedValue { $0 += 1 } } }
        let pipeline = HubSubscriber(format: nil, maxQueueBytes: 1 << 20, isViewer: false) { _ in }
        hub.subscribe(viewers[0])
        hub.subscribe(pipeline)
        #expect(load.current == 1, "a pipeline is not a viewer")
        let start = NIODeadline.uptimeNanoseconds(7_000_000_000)
        // One viewer: every burst wakes it, however close together.
        for burst in 0..<4 {
            hub.publish(Self.audio(Int64(burst) * 10), publisher: 1)
            #expect(hub.flush(now: start + .milliseconds(Int64(burst))) == nil)
            _ = viewers[0].drain()
        }
        #expect(wakes.withLockedValue { $0 } == 4)
        // Four viewers over two hubs: half-way from 2 to 6, so half the interval.
        hub.subscribe(viewers[1])
        other.subscribe(viewers[2])
        other.subscribe(HubSubscriber(format: .flvTag, maxQueueBytes: 1 << 20) { _ in })
        #expect(load.current == 4)
        #expect(load.interval(.milliseconds(100)) == .milliseconds(50))
        hub.publish(Self.audio(100), publisher: 1)
        // The last wake was at 3 ms: 50 − 7 to go.
        #expect(hub.flush(now: start + .milliseconds(10)) == .milliseconds(43))
        #expect(load.interval(.milliseconds(100)) == .milliseconds(50))
        // Six or more: the whole interval.
        other.subscribe(HubSubscriber(format: .flvTag, maxQueueBytes: 1 << 20) { _ in })
        other.subscribe(HubSubscriber(format: .flvTag, maxQueueBytes: 1 << 20) { _ in })
        #expect(load.interval(.milliseconds(100)) == .milliseconds(100))
        // Leaving gives the count back: one by one, and all at once when a hub ends.
        hub.unsubscribe(viewers[1])
        hub.unsubscribe(viewers[1])
        #expect(load.current == 5)
        other.end()
        #expect(load.current == 1)
        #expect(load.interval(.milliseconds(100)) == .zero)
    }

    @Test func identicalSequenceHeadersFromAReconnectAreNotForwardedAgain() throws {
        let hub = makeHub()
        try attach(hub)
        hub.publish(Self.videoSequenceHeader(), publisher: 1)
        let subscriber = HubSubscriber(format: .flvTag, maxQueueBytes: 1 << 20) { _ in }
        hub.subscribe(subscriber)
        #expect(subscriber.drain().packets.count == 1)
        hub.publish(Self.videoSequenceHeader(timestamp: 5000), publisher: 1)
        #expect(subscriber.drain().packets.isEmpty)
        // A changed configuration is forwarded.
        let changed = MediaFrame(kind: .video, timestamp: 6000, isKeyframe: true, isSequenceHeader: true, payload: ByteBuffer(hex: Vectors.avcBaseline360TagBody))
        hub.publish(changed, publisher: 1)
        hub.flush(force: true)
        #expect(subscriber.drain().packets.count == 1)
    }

    @Test func secondPublisherIsRefusedWhileTheFirstIsActiveAndTakesOverWhenIdle() throws {
        let hub = makeHub()
        let start = NIODeadline.uptimeNanoseconds(10_000_000_000)
        let evicted = NIOLockedValueBox(false)
        #expect(hub.attachPublisher(id: 1, now: start) { evicted.withLockedValue { $0 = true } } == .attached(replacedIdle: false))
        hub.publish(Self.audio(0), publisher: 1, now: start + .milliseconds(500))
        let busy = hub.attachPublisher(id: 2, now: start + .milliseconds(1500)) {}
        #expect(busy == .busy(idleFor: .seconds(1)))
        #expect(evicted.withLockedValue { $0 } == false)
        let takeover = hub.attachPublisher(id: 3, now: start + .milliseconds(2600)) {}
        #expect(takeover == .attached(replacedIdle: true))
        #expect(evicted.withLockedValue { $0 })
        // The evicted publisher's frames are refused.
        #expect(hub.publish(Self.audio(30), publisher: 1) == false)
        #expect(hub.publish(Self.audio(30), publisher: 3))
    }

    /// A publisher of the stream on another node (a cluster's ingest) is answered as a second
    /// publisher here would be: busy while the publisher sends, not the owner's while the
    /// stream is another's, and otherwise let through, an idle same-owner publisher evicted.
    @Test func aPublisherElsewhereIsAnsweredAsASecondPublisherHereWouldBe() throws {
        let hub = makeHub()
        let start = NIODeadline.uptimeNanoseconds(10_000_000_000)
        let evicted = NIOLockedValueBox(0)
        #expect(hub.attachPublisher(id: 1, owner: "key:a", now: start) { evicted.withLockedValue { $0 += 1 } } == .attached(replacedIdle: false))
        hub.publish(Self.audio(0), publisher: 1, now: start + .milliseconds(500))
        let isA: (String) -> Bool = { $0 == "key:a" }
        let isB: (String) -> Bool = { $0 == "key:b" }
        #expect(hub.answerPublisherElsewhere(isOwner: isA, now: start + .milliseconds(1500)) == .busy(idleFor: .seconds(1)))
        #expect(hub.answerPublisherElsewhere(isOwner: isB, now: start + .milliseconds(1500)) == .busy(idleFor: .seconds(1)))
        // Idle: a stranger is still refused; the owner takes over, and the idle one goes.
        #expect(hub.answerPublisherElsewhere(isOwner: isB, now: start + .seconds(3)) == .notOwner)
        #expect(evicted.withLockedValue { $0 } == 0)
        #expect(hub.answerPublisherElsewhere(isOwner: isA, now: start + .seconds(3)) == .attached(replacedIdle: true))
        #expect(evicted.withLockedValue { $0 } == 1)
        #expect(!hub.hasPublisher && hub.isHandedOver)
        #expect(hub.publish(Self.audio(30), publisher: 1) == false)
        // Handed over: the node the stream went to answers for it, this hub says nothing.
        #expect(hub.answerPublisherElsewhere(isOwner: isB) == nil)
        #expect(hub.answerPublisherElsewhere(isOwner: isA) == nil)

        // A publisher here within the takeover time of the handover (one admitted before it,
        // attaching after) is busy: the stream's publisher elsewhere has just started.
        #expect(hub.attachPublisher(id: 2, owner: "key:a", now: start + .seconds(4)) {} == .busy(idleFor: .seconds(1)))
        #expect(hub.isHandedOver)

        // Later, a publisher attaches here again: the hub answers again. A draining node
        // yields its sending publisher to the owner's reconnection elsewhere, and to no one else.
        #expect(hub.attachPublisher(id: 2, owner: "key:a", now: start + .seconds(5)) { evicted.withLockedValue { $0 += 1 } } == .attached(replacedIdle: false))
        #expect(!hub.isHandedOver)
        #expect(hub.answerPublisherElsewhere(isOwner: isB, yielding: true, now: start + .seconds(5)) == .busy(idleFor: .zero))
        #expect(hub.answerPublisherElsewhere(isOwner: isA, yielding: true, now: start + .seconds(5)) == .attached(replacedIdle: true))
        #expect(evicted.withLockedValue { $0 } == 2)

        // In the grace period after a publisher left (not handed over): the owner's only.
        #expect(hub.attachPublisher(id: 3, owner: "key:a", now: start + .seconds(8)) {} == .attached(replacedIdle: false))
        hub.detachPublisher(id: 3)
        #expect(hub.answerPublisherElsewhere(isOwner: isB) == .notOwner)
        #expect(hub.answerPublisherElsewhere(isOwner: isA) == .attached(replacedIdle: false))
        #expect(hub.answerPublisherElsewhere(isOwner: isA) == nil)
        hub.end()
        #expect(hub.answerPublisherElsewhere(isOwner: isA) == nil)
    }

    @Test func timestampsContinueAcrossAPublisherReconnect() throws {
        let hub = makeHub()
        try attach(hub, id: 1)
        let subscriber = HubSubscriber(format: nil, maxQueueBytes: 1 << 20) { _ in }
        hub.subscribe(subscriber)
        for index in 0..<30 { hub.publish(Self.video(Int64(index) * 33, keyframe: index == 0), publisher: 1) }
        hub.detachPublisher(id: 1)
        try attach(hub, id: 2)
        // The new encoder restarts its clock at 0.
        for index in 0..<30 { hub.publish(Self.video(Int64(index) * 33, keyframe: index == 0), publisher: 2) }
        hub.flush(force: true)
        let timestamps = subscriber.drain().packets.map(\.frame.timestamp)
        #expect(timestamps.count == 60)
        #expect(zip(timestamps, timestamps.dropFirst()).allSatisfy { $0 <= $1 }, "timestamps went backwards: \(timestamps)")
        #expect(timestamps[30] > timestamps[29])
    }

    /// The first media frame after a new publisher (whose identical configuration record is
    /// not forwarded) is marked, once: HLS starts a discontinuity there.
    @Test func theFirstMediaFrameOfANewPublisherIsMarkedADiscontinuity() throws {
        let hub = makeHub()
        try attach(hub, id: 1)
        let subscriber = HubSubscriber(format: nil, maxQueueBytes: 1 << 20) { _ in }
        hub.subscribe(subscriber)
        hub.publish(Self.videoSequenceHeader(), publisher: 1)
        for index in 0..<5 { hub.publish(Self.video(Int64(index) * 33, keyframe: index == 0), publisher: 1) }
        hub.detachPublisher(id: 1)
        try attach(hub, id: 2)
        hub.publish(Self.videoSequenceHeader(), publisher: 2)
        for index in 0..<5 { hub.publish(Self.video(Int64(index) * 33, keyframe: index == 0), publisher: 2) }
        hub.flush(force: true)
        let frames = subscriber.drain().packets.map(\.frame)
        #expect(frames.count == 11)
        #expect(frames.enumerated().filter { $0.element.isDiscontinuity }.map(\.offset) == [6])
    }

    @Test func aHubWithoutJumpThresholdKeepsItsInputTimeline() throws {
        var configuration = HubConfiguration()
        configuration.timestampJumpThreshold = nil
        let hub = makeHub(configuration)
        try attach(hub)
        let subscriber = HubSubscriber(format: nil, maxQueueBytes: 1 << 20) { _ in }
        hub.subscribe(subscriber)
        // A 3 s gap (frames a transcoder dropped) stays a gap: keyframes keep the source's times.
        for timestamp: Int64 in [2067, 2100, 5067, 5100] {
            hub.publish(Self.video(timestamp, keyframe: timestamp % 1000 == 67), publisher: 1)
        }
        hub.flush(force: true)
        #expect(subscriber.drain().packets.map(\.frame.timestamp) == [2067, 2100, 5067, 5100])
        // The default re-bases such a jump.
        let rebasing = makeHub()
        try attach(rebasing)
        let other = HubSubscriber(format: nil, maxQueueBytes: 1 << 20) { _ in }
        rebasing.subscribe(other)
        for timestamp: Int64 in [2067, 2100, 5067, 5100] {
            rebasing.publish(Self.video(timestamp, keyframe: timestamp % 1000 == 67), publisher: 1)
        }
        rebasing.flush(force: true)
        #expect(other.drain().packets.map(\.frame.timestamp) != [2067, 2100, 5067, 5100])
    }

    @Test func endingTheHubEndsEverySubscriber() throws {
        let hub = makeHub()
        try attach(hub)
        let subscriber = HubSubscriber(format: .flvTag, maxQueueBytes: 1 << 20) { _ in }
        hub.subscribe(subscriber)
        hub.end()
        #expect(subscriber.drain().ended)
        #expect(hub.subscribe(HubSubscriber(format: .flvTag, maxQueueBytes: 1 << 20) { _ in }) == false)
        #expect(hub.attachPublisher(id: 9) {} == .ended)
    }

    @Test func gopCacheIsDroppedWhenAStreamNeverSendsAnotherKeyframe() throws {
        var configuration = HubConfiguration()
        configuration.gopCacheMaxFrames = 10
        let hub = makeHub(configuration)
        try attach(hub)
        hub.publish(Self.video(0, keyframe: true), publisher: 1)
        for index in 1...20 { hub.publish(Self.video(Int64(index) * 33, keyframe: false), publisher: 1) }
        #expect(hub.statistics.gopFrames <= 10)
        let subscriber = HubSubscriber(format: .flvTag, maxQueueBytes: 1 << 20) { _ in }
        hub.subscribe(subscriber)
        // A new viewer is never handed frames it cannot decode.
        #expect(subscriber.drain().packets.allSatisfy { $0.frame.isKeyframe } )
    }

    @Test(arguments: [
        ("live", "demo", true), ("live", "a.b-c_d", true), ("", "demo", false), ("live", "", false),
        ("live", "../etc", false), ("live", ".hidden", false), ("li ve", "x", false), ("live", "x/y", false),
        ("live", String(repeating: "a", count: 129), false), ("live", String(repeating: "a", count: 128), true),
    ])
    func streamPathValidation(app: String, name: String, valid: Bool) {
        #expect(((try? StreamPath(app: app, name: name)) != nil) == valid)
    }
}
