import Media
import MetricsTestKit
import NIOCore
import Testing

@testable import Cluster

@Suite struct LocalBusTests {
    @Test func wildcardSubscriptionsReceiveMatchingSubjectsOnly() throws {
        let bus = LocalBus()
        let exact = Collector<String>()
        let star = Collector<String>()
        let tail = Collector<String>()
        let subscriptions = try [
            bus.subscribe(subject: "media.live.cam1.src") { exact.append($0.subject) },
            bus.subscribe(subject: "media.live.*.src") { star.append($0.subject) },
            bus.subscribe(subject: "media.>") { tail.append($0.subject) },
        ]
        for subject in ["media.live.cam1.src", "media.live.cam2.src", "media.live.cam1.720p", "media", "control.x"] {
            try bus.publish(subject: subject, payload: ByteBuffer(string: subject))
        }
        #expect(exact.values == ["media.live.cam1.src"])
        #expect(star.values == ["media.live.cam1.src", "media.live.cam2.src"])
        #expect(tail.values == ["media.live.cam1.src", "media.live.cam2.src", "media.live.cam1.720p"])
        #expect(subscriptions.count == 3)
    }

    @Test func payloadReachesTheHandlerUnchanged() throws {
        let bus = LocalBus()
        let received = Collector<[UInt8]>()
        let subscription = try bus.subscribe(subject: "a.b") { received.append(Array($0.payload.readableBytesView)) }
        try bus.publish(subject: "a.b", payload: ByteBuffer(bytes: [1, 2, 3, 250]))
        #expect(received.values == [[1, 2, 3, 250]])
        #expect(bus.statistics.messagesOut == 1)
        #expect(bus.statistics.messagesIn == 1)
        subscription.cancel()
    }

    @Test func cancelledOrReleasedSubscriptionReceivesNothing() throws {
        let bus = LocalBus()
        let received = Collector<String>()
        let baseline = bus.subscriptionCount
        let subscription = try bus.subscribe(subject: "a.*") { received.append($0.subject) }
        try bus.publish(subject: "a.one", payload: ByteBuffer())
        subscription.cancel()
        subscription.cancel()
        try bus.publish(subject: "a.two", payload: ByteBuffer())
        do {
            _ = try bus.subscribe(subject: "a.*") { received.append("released " + $0.subject) }
        }
        try bus.publish(subject: "a.three", payload: ByteBuffer())
        #expect(received.values == ["a.one"])
        #expect(bus.subscriptionCount == baseline)
    }

    @Test func requestGetsTheResponderReply() async throws {
        let bus = LocalBus()
        let responder = try bus.subscribe(subject: "echo.*") { message in
            var reply = ByteBuffer(string: "re:")
            reply.writeImmutableBuffer(message.payload)
            try? bus.respond(to: message, payload: reply)
        }
        let reply = try await bus.request(subject: "echo.1", payload: ByteBuffer(string: "ping"), timeout: .seconds(2))
        #expect(String(buffer: reply) == "re:ping")
        responder.cancel()
    }

    @Test func requestWithoutSubscriberFailsWithNoResponders() async {
        let bus = LocalBus()
        await #expect(throws: BusError.noResponders(subject: "nobody.home")) {
            try await bus.request(subject: "nobody.home", payload: ByteBuffer(), timeout: .seconds(2))
        }
    }

    @Test func requestTimesOutWhenNobodyAnswers() async throws {
        let bus = LocalBus()
        let silent = try bus.subscribe(subject: "silent") { _ in }
        let start = ContinuousClock.now
        await #expect(throws: BusError.timeout(subject: "silent")) {
            try await bus.request(subject: "silent", payload: ByteBuffer(), timeout: .milliseconds(100))
        }
        #expect(ContinuousClock.now - start < .seconds(2))
        silent.cancel()
    }

    @Test func requestIsCancelledWithItsTask() async throws {
        let bus = LocalBus()
        let silent = try bus.subscribe(subject: "silent") { _ in }
        let task = Task {
            try await bus.request(subject: "silent", payload: ByteBuffer(), timeout: .seconds(30))
        }
        try await Task.sleep(for: .milliseconds(50))
        task.cancel()
        let start = ContinuousClock.now
        await #expect(throws: BusError.cancelled) { try await task.value }
        #expect(ContinuousClock.now - start < .seconds(5))
        silent.cancel()
    }

    @Test func closedBusFailsPendingAndNewRequests() async throws {
        let bus = LocalBus()
        let silent = try bus.subscribe(subject: "silent") { _ in }
        let task = Task {
            try await bus.request(subject: "silent", payload: ByteBuffer(), timeout: .seconds(30))
        }
        try await Task.sleep(for: .milliseconds(50))
        bus.close()
        await #expect(throws: BusError.closed) { try await task.value }
        #expect(throws: BusError.closed) { try bus.publish(subject: "silent", payload: ByteBuffer()) }
        silent.cancel()
    }

    @Test func respondingToAPlainMessageFails() throws {
        let bus = LocalBus()
        #expect(throws: BusError.noReplySubject("x")) {
            try bus.respond(to: BusMessage(subject: "x", payload: ByteBuffer()), payload: ByteBuffer())
        }
    }

    @Test func invalidSubjectsAndOversizedPayloadsAreRefused() throws {
        let bus = LocalBus(maxPayload: 8)
        #expect(throws: BusError.invalidSubject("a.*")) { try bus.publish(subject: "a.*", payload: ByteBuffer()) }
        #expect(throws: BusError.invalidSubject("a..b")) { _ = try bus.subscribe(subject: "a..b") { _ in } }
        #expect(throws: BusError.payloadTooLarge(size: 9, limit: 8)) {
            try bus.publish(subject: "a", payload: ByteBuffer(bytes: Array(repeating: 0, count: 9)))
        }
        #expect(bus.statistics.droppedOutgoing == 1)
    }

    @Test func mediaFramesCrossTheBusAndBadMessagesAreCounted() throws {
        let bus = LocalBus(maxPayload: 1 << 20)
        let metrics = TestMetrics()
        let subject = try MediaBusSubject(path: StreamPath(app: "live", name: "cam.1"), rendition: "src")
        #expect(subject.subject == "media.live.cam%2E1.src")
        let received = Collector<FrameSnapshot>()
        let subscription = try MediaBusSubscription(bus: bus, subject: subject, metrics: metrics) { frame, _ in received.append(FrameSnapshot(frame)) }
        let publisher = MediaBusPublisher(bus: bus, subject: subject, epoch: 1)
        let frames = [Frames.videoSequenceHeader(), Frames.video(timestamp: 0, keyframe: true, size: 3 << 20), Frames.audio(timestamp: 5)]
        for frame in frames {
            try publisher.publish(frame)
        }
        var wrongVersion = ByteBuffer()
        MediaBusFrameHeader(kind: .audio, isKeyframe: false, isSequenceHeader: false, epoch: 1, sequence: 9, timestamp: 0, compositionTime: 0, frameLength: 0)
            .write(into: &wrongVersion)
        wrongVersion.setInteger(UInt8(9), at: 1)
        try bus.publish(subject: subject.subject, payload: wrongVersion)
        try bus.publish(subject: subject.subject, payload: ByteBuffer(bytes: [0xEB, 0x01]))
        try bus.publish(subject: subject.subject, payload: ByteBuffer(bytes: [0xEB, 0x01]))

        #expect(received.values == frames.map(FrameSnapshot.init))
        #expect(subscription.statistics.rejected == ["version": 1, "truncated": 2])
        let truncated = try metrics.expectCounter("estuary_bus_messages_dropped_total", [("reason", "truncated")])
        let version = try metrics.expectCounter("estuary_bus_messages_dropped_total", [("reason", "version")])
        #expect(truncated.totalValue == 2)
        #expect(version.totalValue == 1)
    }
}
