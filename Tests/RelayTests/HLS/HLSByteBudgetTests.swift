import Logging
import Media
import NIOCore
import NIOPosix
import TestSupport
import Testing

@testable import Relay

/// The node's HLS budget (`HLSByteBudget`, `hlsMaxBytes`): the sum over every rendition of
/// its window and its segment in progress. Under pressure windows shrink to three segments;
/// past the limit a rendition's segment in progress is abandoned and segmenting resumes at a
/// keyframe once there is room; no path keeps bytes charged after its rendition is gone.
@Suite struct HLSByteBudgetTests {
    @Test func reservationsStopAtTheLimitAndAccountsGiveBackWhatTheyHold() {
        let budget = HLSByteBudget(limit: 1000)
        #expect(budget.pressureThreshold == 750)
        let first = budget.account()
        #expect(first.reserve(600))
        var second: HLSByteBudget.Account? = budget.account()
        #expect(second?.reserve(400) == true)
        #expect(second?.reserve(1) == false, "a reservation past the limit was taken")
        #expect(budget.inUse == 1000)
        #expect(budget.isUnderPressure)
        // A release gives back at most what the account holds.
        first.release(10_000)
        #expect(first.bytesHeld == 0)
        #expect(budget.inUse == 400)
        #expect(!budget.isUnderPressure)
        // An account that goes away gives back what it still held.
        second = nil
        #expect(budget.inUse == 0)
    }

    @Test func underPressureAWindowKeepsThreeSegmentsAndGivesTheRestBack() async {
        var configuration = HLSConfiguration()
        configuration.windowSegments = 6
        let budget = HLSByteBudget(limit: 10_000)
        let rendition = HLSRendition(name: "src", configuration: configuration, account: budget.account())
        func segment(_ sequence: Int) async {
            #expect(rendition.account.reserve(100))
            await rendition.beginSegment(sequence, initSection: 0, discontinuity: false, programDateTime: 0)
            await rendition.completeSegment(duration: 2, transportStream: ByteBuffer(bytes: [0x47]), charged: 100)
        }
        for sequence in 0..<8 { await segment(sequence) }
        #expect(await rendition.segments.map(\.sequence) == Array(2..<8))
        #expect(rendition.account.bytesHeld == 600, "the window's segments are what it holds")

        // Another rendition takes the node past three quarters: this window keeps three.
        let other = budget.account()
        #expect(other.reserve(8_500))
        await segment(8)
        #expect(await rendition.segments.map(\.sequence) == [6, 7, 8])
        #expect(rendition.account.bytesHeld == 300)
        #expect(budget.inUse == 8_800)

        // The pressure gone, the window grows back to six.
        other.release(8_500)
        for sequence in 9..<13 { await segment(sequence) }
        #expect(await rendition.segments.map(\.sequence) == Array(7..<13))
    }

    /// A rendition whose segment in progress the budget refused gives back its window down to
    /// three segments at once (it may complete none for a while), and a request waiting on
    /// the abandoned segment is answered as soon as the next one begins, not at the timeout.
    @Test func anAbandonForTheBudgetShrinksTheWindowAndReleasesItsWaiters() async throws {
        var configuration = HLSConfiguration()
        configuration.blockingTimeout = .seconds(30)
        let budget = HLSByteBudget(limit: 1 << 20)
        let rendition = HLSRendition(name: "src", configuration: configuration, account: budget.account())
        for sequence in 0..<6 {
            #expect(rendition.account.reserve(100))
            await rendition.beginSegment(sequence, initSection: 0, discontinuity: false, programDateTime: 0)
            await rendition.completeSegment(duration: 2, transportStream: ByteBuffer(bytes: [0x47]), charged: 100)
        }
        await rendition.beginSegment(6, initSection: 0, discontinuity: false, programDateTime: 0)
        let waiting = Task { await rendition.waitFor(sequence: 6, part: 1) }
        try await Task.sleep(for: .milliseconds(50))
        await rendition.abandonSegment(reason: .nodeBudget)
        #expect(await rendition.segments.map(\.sequence) == [3, 4, 5])
        #expect(rendition.account.bytesHeld == 300)
        // The segmenter skips sequence 6 and begins 7 at the next keyframe.
        let began = ContinuousClock.now
        await rendition.beginSegment(7, initSection: 1, discontinuity: true, programDateTime: 0)
        #expect(await waiting.value, "the wait for the abandoned segment's part was not answered")
        #expect(ContinuousClock.now - began < .seconds(5))
    }

    @Test func pastTheLimitTheSegmentInProgressIsAbandonedAndSegmentingResumesWhenThereIsRoom() async throws {
        var configuration = HLSConfiguration()
        configuration.maxNodeBytes = 1 << 20
        let budget = HLSByteBudget(limit: configuration.maxNodeBytes)
        let account = budget.account()
        let (events, continuation) = AsyncStream.makeStream(of: HLSSegmenter.Event.self)
        let segmenter = HLSSegmenter(configuration: configuration, events: continuation, logger: Logger(label: "HLSByteBudgetTests"), account: account)
        segmenter.process(try MediaFrame.classified(kind: .video, timestamp: 0, payload: ByteBuffer(bytes: HLSOpenSegmentTests.avcSequenceHeader)))

        // Other renditions hold all but 50 KB of the node's budget.
        let others = budget.account()
        #expect(others.reserve(budget.limit - 50_000))
        // A GOP of a keyframe and 63 frames of 2,000 bytes (about 280 KB counted): abandoned.
        var timestamp: Int64 = 0
        segmenter.process(HLSOpenSegmentTests.videoFrame(keyframe: true, timestamp: timestamp, size: 1000))
        for _ in 1..<64 {
            timestamp += 33
            segmenter.process(HLSOpenSegmentTests.videoFrame(keyframe: false, timestamp: timestamp, size: 2000))
        }
        #expect(budget.inUse <= budget.limit)
        #expect(segmenter.openSegmentBytes == 0, "the segment in progress was not given up")
        #expect(account.bytesHeld == 0, "an abandoned segment's bytes stayed charged")

        // Room again: segmenting resumes at the next keyframe, as a discontinuity.
        others.release(budget.limit)
        HLSOpenSegmentTests.feedGOPs(3, framesPerGOP: 64, into: segmenter, after: &timestamp)
        continuation.finish()
        let (rendition, _, droppedParts) = await HLSOpenSegmentTests.replay(events, configuration: configuration, account: account)
        #expect(await rendition.abandonedSegments == [.nodeBudget: 1])
        #expect(droppedParts.count == 1)
        let segments = await rendition.segments
        #expect(segments.compactMap(\.duration) == [2.112, 2.112])
        #expect(segments.first?.discontinuity == true)
        // What the node holds is what the window and the segment in progress were charged.
        let charged = segments.reduce(0) { $0 + $1.charged }
        #expect(charged > 0)
        #expect(account.bytesHeld == charged + segmenter.openSegmentBytes)
        #expect(budget.inUse == account.bytesHeld)
    }
}

/// The budget's relief (`HLSService.relievePressure`): when the node crosses into pressure,
/// the windows of streams that ended go at once instead of after their retention, and every
/// live window is cut to three segments without waiting for its next one.
@Suite struct HLSBudgetReliefTests {
    @Test func crossingIntoPressureDropsEndedWindowsAndCutsLiveOnesToThree() async throws {
        var configuration = HLSConfiguration()
        configuration.maxNodeBytes = 4 << 20
        configuration.windowSegments = 6
        configuration.endedRetention = .seconds(60)
        let group = MultiThreadedEventLoopGroup.singleton
        let service = HLSService(configuration: configuration, group: group, logger: Logger(label: "HLSBudgetReliefTests"))
        let budget = service.budget
        let registry = StreamRegistry(serializers: [])

        /// A stream of `gops` GOPs of 64 frames (2.1 s each), segmented by the service.
        func publish(_ name: String, gops: Int) async throws -> (StreamHub, StreamHub.PublisherID, StreamPath) {
            let path = try StreamPath(app: "live", name: name)
            let (hub, publisher) = await registry.hubForPublishing(path)
            _ = hub.attachPublisher(id: publisher, evict: {})
            #expect(await service.attach(hub))
            _ = hub.publish(try MediaFrame.classified(kind: .video, timestamp: 0, payload: ByteBuffer(bytes: HLSOpenSegmentTests.avcSequenceHeader)), publisher: publisher)
            var timestamp: Int64 = 0
            for _ in 0..<gops {
                for index in 0..<64 {
                    timestamp += 33
                    _ = hub.publish(HLSOpenSegmentTests.videoFrame(keyframe: index == 0, timestamp: timestamp, size: 600), publisher: publisher)
                }
                _ = hub.flush(force: true)
                try await Task.sleep(for: .milliseconds(10))
            }
            return (hub, publisher, path)
        }
        func completeSegments(of path: StreamPath) async -> Int {
            guard let rendition = await service.renditions(of: path)["src"] else { return -1 }
            return await rendition.segments.filter { $0.duration != nil }.count
        }

        let (endedHub, _, endedPath) = try await publish("ended", gops: 8)
        let (_, _, livePath) = try await publish("live", gops: 8)
        for _ in 0..<1000 {
            let counts = (await completeSegments(of: endedPath), await completeSegments(of: livePath))
            if counts == (6, 6) { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(await completeSegments(of: endedPath) == 6)
        #expect(await completeSegments(of: livePath) == 6)
        endedHub.end()
        for _ in 0..<1000 where await service.endedRenditionCount != 1 {
            try await Task.sleep(for: .milliseconds(10))
        }
        let ended = try #require(await service.renditions(of: endedPath)["src"])
        let live = try #require(await service.renditions(of: livePath)["src"])
        let endedBytes = ended.account.bytesHeld
        #expect(endedBytes > 0)
        #expect(endedBytes < budget.limit / 4 - 1000, "the test's ended window must not lift the pressure alone")

        // Something else takes the node to just under its limit, crossing three quarters.
        let other = budget.account()
        #expect(other.reserve(budget.limit - budget.inUse - 1000))
        for _ in 0..<1000 {
            let relieved = (await completeSegments(of: livePath), await service.renditions(of: endedPath).isEmpty)
            if relieved == (3, true) { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(await service.renditions(of: endedPath).isEmpty, "the ended stream's window was kept under pressure")
        #expect(await ended.segments.isEmpty)
        #expect(ended.account.bytesHeld == 0)
        #expect(await completeSegments(of: livePath) == 3, "the live window was not cut to three")
        #expect(budget.inUse == other.bytesHeld + live.account.bytesHeld, "what the node holds is the live rendition and the rest")

        // Still under pressure, nothing crosses again: a stream that ends now is relieved of
        // its window all the same (asked when it ends), not kept for its retention.
        #expect(budget.isUnderPressure)
        let (secondHub, _, secondPath) = try await publish("second", gops: 5)
        for _ in 0..<1000 where await completeSegments(of: secondPath) < 3 {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(await completeSegments(of: secondPath) == 3, "under pressure a new rendition keeps three")
        secondHub.end()
        for _ in 0..<1000 where await !service.renditions(of: secondPath).isEmpty {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(await service.renditions(of: secondPath).isEmpty, "a stream that ended under pressure kept its window")
        #expect(budget.inUse == other.bytesHeld + live.account.bytesHeld)
        other.release(other.bytesHeld)
    }
}
