import Logging
import Media
import NIOCore
import Synchronization
import Testing

@testable import Cluster

/// The relay's lookups on the bus: any viewer can start one by asking for a name, and each
/// holds a subscription for up to the GOP request's timeout, so only so many run at once.
struct BusStreamSourceTests {
    @Test func lookupsOverTheLimitAreAnsweredNotFoundAtOnce() async throws {
        let bus = LocalBus()
        // A publisher that never answers its GOP requests: every lookup waits its full timeout.
        let silent = try bus.subscribe(subject: ">") { _ in }
        var configuration = BusStreamSource.Configuration()
        configuration.gopRequestTimeout = .seconds(2)
        configuration.maxConcurrentOpens = 2
        let source = BusStreamSource(bus: bus, configuration: configuration, logger: Logger(label: "test"))
        let registry = StreamRegistry(serializers: [])
        let start = ContinuousClock.now
        let times = await withTaskGroup(of: Duration.self) { group in
            for index in 0..<5 {
                group.addTask {
                    let path = try! StreamPath(app: "live", name: "nobody\(index)")
                    let hub = await source.open(.source(path), registry: registry)
                    #expect(hub == nil)
                    return ContinuousClock.now - start
                }
            }
            var times: [Duration] = []
            for await time in group { times.append(time) }
            return times.sorted()
        }
        // Three are refused at once; the two admitted wait for their GOP request to time out.
        #expect(times.filter { $0 < .seconds(1) }.count == 3, "finish times: \(times)")
        #expect(times.filter { $0 >= .seconds(1) }.count == 2, "finish times: \(times)")
        // The slots come back: a lookup after them is admitted (and waits its timeout again).
        let again = ContinuousClock.now
        #expect(await source.open(.source(try StreamPath(app: "live", name: "later")), registry: registry) == nil)
        #expect(ContinuousClock.now - again >= .seconds(1))
        silent.cancel()
    }

    /// Issue 23, item 5: a message lost on the bus (a reconnect) is refilled from the
    /// publisher's GOP, so the mirror's viewers get every frame, in order, at once, instead of
    /// waiting for the next keyframe.
    @Test func aGapOnTheBusIsRefilledFromThePublishersGOP() async throws {
        let bus = LocalBus()
        let path = try StreamPath(app: "live", name: "gap")
        let subject = try MediaBusSubject(.source(path))
        var encoder = MediaBusFrameEncoder(epoch: 1, maxMessageBytes: 1 << 20)
        let sent = Mutex<[MediaFrame]>([Frames.videoSequenceHeader(), Frames.video(timestamp: 0, keyframe: true)])
        // The publisher: answers GOP requests with everything it sent (one GOP).
        let answers = try bus.subscribe(subject: MediaBusGOP.subject(for: subject)) { message in
            try? bus.respond(to: message, payload: MediaBusGOP.encode(sent.withLock { $0 }, maxBytes: 1 << 20))
        }
        let source = BusStreamSource(bus: bus, configuration: .init(), logger: Logger(label: "test"))
        let registry = StreamRegistry(serializers: [])
        let hub = try #require(await source.open(.source(path), registry: registry))
        let received = Mutex<[Int64]>([])
        let subscription = try #require(FrameSubscription.start(on: hub, delivery: .inline { batch in
            received.withLock { $0 += batch.frames.filter { $0.kind == .video && !$0.isSequenceHeader }.map(\.timestamp) }
        }))
        func send(_ frame: MediaFrame, lost: Bool = false) throws {
            sent.withLock { $0.append(frame) }
            let messages = try encoder.encode(frame)
            guard !lost else { return }
            for message in messages { try bus.publish(subject: subject.subject, payload: message) }
        }
        try send(Frames.video(timestamp: 33, keyframe: false))
        try send(Frames.video(timestamp: 66, keyframe: false), lost: true)
        try send(Frames.video(timestamp: 100, keyframe: false))
        try send(Frames.video(timestamp: 133, keyframe: false))
        // The refill's GOP request is answered on a task: wait for it, bounded.
        for _ in 0..<150 where received.withLock({ $0 }) != [0, 33, 66, 100, 133] {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(received.withLock { $0 } == [0, 33, 66, 100, 133], "the mirror's video after a lost message")
        subscription.cancel()
        answers.cancel()
    }
}
