import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

@testable import Media

/// A viewer's writes a slice at a time (`ViewerBacklog`): a GOP is handed over in slices of
/// `sliceLength`, each once the last is written; a live burst in one; the order is the hub's; no
/// wake-up is lost between slices; the end comes after everything before it.
@Suite struct ViewerBacklogTests {
    typealias Hub = StreamHubTests

    /// A hub with a publisher and a subscriber that counts its wake-ups.
    func makeViewer() throws -> (StreamHub, HubSubscriber, wakes: () -> Int) {
        var configuration = HubConfiguration()
        configuration.subscriberQueueBytes = 1 << 20
        configuration.wakeInterval = .zero
        let hub = Hub().makeHub(configuration)
        try Hub().attach(hub)
        let count = WakeCounter()
        let subscriber = HubSubscriber(format: nil, maxQueueBytes: configuration.subscriberQueueBytes) { _ in count.add() }
        return (hub, subscriber, { count.value })
    }

    /// A viewer that joined a GOP of 20 frames after a sequence header: 21 writes to make.
    func makeViewerOfTwentyFrameGOP() throws -> (StreamHub, HubSubscriber, wakes: () -> Int) {
        let (hub, subscriber, wakes) = try makeViewer()
        hub.publish(Hub.videoSequenceHeader(), publisher: 1)
        for index in 0..<20 { hub.publish(Hub.video(Int64(index), keyframe: index == 0), publisher: 1) }
        #expect(hub.subscribe(subscriber))
        return (hub, subscriber, wakes)
    }

    /// Pumps once, recording the timestamps written and whether each carried a promise.
    func pump(_ backlog: inout ViewerBacklog, _ subscriber: HubSubscriber, on loop: EmbeddedEventLoop, into written: inout [(Int64, Bool)]) -> ViewerBacklog.Outcome {
        var slice: [(Int64, Bool)] = []
        let outcome = backlog.pump(from: subscriber, eventLoop: loop) { unit, promise in
            guard case .packet(let packet) = unit else {
                Issue.record("a subscriber of raw frames got merged bytes")
                return
            }
            slice.append((packet.frame.timestamp, promise != nil))
            promise?.succeed(())
        }
        written += slice
        return outcome
    }

    @Test func aJoiningGOPIsHandedOverASliceAtATimeInOrder() throws {
        let (hub, subscriber, _) = try makeViewer()
        let loop = EmbeddedEventLoop()
        // 40 frames before the viewer joins: it is replayed the whole GOP (records + 40).
        hub.publish(Hub.videoSequenceHeader(), publisher: 1)
        for index in 0..<40 { hub.publish(Hub.video(Int64(index) * 33, keyframe: index == 0), publisher: 1) }
        #expect(hub.subscribe(subscriber))
        var backlog = ViewerBacklog()
        var written: [(Int64, Bool)] = []
        var slices = 0
        var outcome = pump(&backlog, subscriber, on: loop, into: &written)
        while case .sliceInFlight(let future) = outcome, slices < 10 {
            #expect(written.count == (slices + 1) * ViewerBacklog.sliceLength)
            // Only the slice's last write carries the promise.
            #expect(written.suffix(ViewerBacklog.sliceLength).map(\.1) == Array(repeating: false, count: ViewerBacklog.sliceLength - 1) + [true])
            loop.run()
            try future.wait()
            slices += 1
            outcome = pump(&backlog, subscriber, on: loop, into: &written)
        }
        #expect(slices == 41 / ViewerBacklog.sliceLength)
        guard case .idle = outcome else { Issue.record("expected idle, got \(outcome)"); return }
        #expect(written.count == 41)
        #expect(written.map(\.0) == [0] + (0..<40).map { Int64($0) * 33 })
        #expect(backlog.pendingCount == 0)
    }

    @Test func aLiveBurstIsOneSliceAndTheNextBurstWakesAgain() throws {
        let (hub, subscriber, wakes) = try makeViewer()
        let loop = EmbeddedEventLoop()
        hub.publish(Hub.videoSequenceHeader(), publisher: 1)
        hub.publish(Hub.video(0, keyframe: true), publisher: 1)
        #expect(hub.subscribe(subscriber))
        var backlog = ViewerBacklog()
        var written: [(Int64, Bool)] = []
        guard case .idle = pump(&backlog, subscriber, on: loop, into: &written) else { Issue.record("join"); return }
        for burst in 0..<3 {
            let before = wakes()
            for index in 0..<5 { hub.publish(Hub.audio(Int64(100 * burst + index)), publisher: 1) }
            hub.flush(force: true)
            #expect(wakes() == before + 1)
            let count = written.count
            guard case .idle = pump(&backlog, subscriber, on: loop, into: &written) else { Issue.record("burst \(burst)"); return }
            #expect(written.count == count + 5)
            #expect(!written.suffix(5).contains { $0.1 })
        }
    }

    /// A socket that stopped taking data must still fill the channel up to its high-water
    /// mark, or the viewer would never be unwritable and never time out: a pump (a wake-up)
    /// while a slice is on its way hands over the next one.
    @Test func aPumpWhileASliceIsOnItsWayHandsOverTheNext() throws {
        let (_, subscriber, _) = try makeViewerOfTwentyFrameGOP()
        let loop = EmbeddedEventLoop()
        var backlog = ViewerBacklog()
        var written: [(Int64, Bool)] = []
        guard case .sliceInFlight = pump(&backlog, subscriber, on: loop, into: &written) else { Issue.record("join"); return }
        #expect(written.count == ViewerBacklog.sliceLength)
        // Without waiting for the first slice's future (a wake-up comes first):
        guard case .sliceInFlight = pump(&backlog, subscriber, on: loop, into: &written) else { Issue.record("second slice"); return }
        #expect(written.count == 2 * ViewerBacklog.sliceLength)
        #expect(written.map(\.0) == [0] + (0..<(2 * ViewerBacklog.sliceLength - 1)).map { Int64($0) })
    }

    @Test func aWakeDuringSlicesIsNotLostAndTheEndComesLast() throws {
        let (hub, subscriber, wakes) = try makeViewerOfTwentyFrameGOP()
        let loop = EmbeddedEventLoop()
        var backlog = ViewerBacklog()
        var written: [(Int64, Bool)] = []
        guard case .sliceInFlight(let first) = pump(&backlog, subscriber, on: loop, into: &written) else { Issue.record("join"); return }
        // New media and the stream's end arrive while the first slice is on its way.
        hub.publish(Hub.video(500, keyframe: false), publisher: 1)
        hub.end()
        #expect(wakes() >= 1)
        loop.run()
        try first.wait()
        // The rest of the join, then what came during it, then the end.
        var outcome = pump(&backlog, subscriber, on: loop, into: &written)
        if case .sliceInFlight(let next) = outcome {
            loop.run()
            try next.wait()
            outcome = pump(&backlog, subscriber, on: loop, into: &written)
        }
        guard case .ended = outcome else { Issue.record("expected the end, got \(outcome)"); return }
        #expect(written.map(\.0) == [0] + (0..<20).map { Int64($0) } + [500])
    }
}

extension ViewerBacklogTests {
    /// A viewer of a serialised format that takes a live burst whole writes it as one
    /// buffer: the frames' shared bytes, in order, made once for every viewer; a viewer
    /// that joined during the burst gets only what came after its join, frame by frame.
    @Test func aWholeBurstIsOneWriteOfTheFramesBytesSharedByEveryViewer() throws {
        var configuration = HubConfiguration()
        configuration.wakeInterval = .seconds(10)
        let hub = Hub().makeHub(configuration)
        try Hub().attach(hub)
        let loop = EmbeddedEventLoop()
        hub.publish(Hub.videoSequenceHeader(), publisher: 1)
        hub.publish(Hub.video(0, keyframe: true), publisher: 1)
        let viewers = (0..<3).map { _ in HubSubscriber(format: .flvTag, maxQueueBytes: 1 << 20) { _ in } }
        for viewer in viewers.prefix(2) { #expect(hub.subscribe(viewer)) }
        var backlogs = [ViewerBacklog](repeating: ViewerBacklog(), count: 3)
        func writes(_ index: Int) -> [ViewerBacklog.Unit] {
            var units: [ViewerBacklog.Unit] = []
            _ = backlogs[index].pump(from: viewers[index], eventLoop: loop) { unit, promise in
                units.append(unit)
                promise?.succeed(())
            }
            return units
        }
        _ = writes(0)
        _ = writes(1)
        hub.flush(force: true)
        let frames = [Hub.audio(10), Hub.video(33, keyframe: false), Hub.audio(33)]
        hub.publish(frames[0], publisher: 1)
        // The third viewer joins during the burst: the first frame was in its replay.
        #expect(hub.subscribe(viewers[2]))
        _ = writes(2)
        hub.publish(frames[1], publisher: 1)
        hub.publish(frames[2], publisher: 1)
        #expect(hub.flush() != nil)  // within the interval: nobody has the burst yet
        #expect(writes(0).isEmpty)
        hub.flush(force: true)
        let expected = frames.reduce(into: ByteBuffer()) { $0.writeImmutableBuffer(FLVTagEncoder.encode($1, allocator: ByteBufferAllocator())) }
        var addresses: Set<UInt> = []
        for index in 0..<2 {
            let units = writes(index)
            guard units.count == 1, case .bytes(let bytes) = units[0] else { Issue.record("viewer \(index): \(units.count) writes"); continue }
            #expect(bytes == expected)
            addresses.insert(bytes.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) })
        }
        #expect(addresses.count == 1, "every viewer must write the same storage")
        let late = writes(2)
        #expect(late.count == 2)
        let lateTimestamps: [Int64] = late.compactMap { unit -> Int64? in
            guard case .packet(let packet) = unit else { return nil }
            return packet.frame.timestamp
        }
        #expect(lateTimestamps == [33, 33])
    }
}

/// Wake-ups counted from the hub's thread.
final class WakeCounter: Sendable {
    private let count = NIOLockedValueBox(0)
    func add() { count.withLockedValue { $0 += 1 } }
    var value: Int { count.withLockedValue { $0 } }
}
