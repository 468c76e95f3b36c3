import Media
import NIOCore
import Testing

@testable import Transcode

@Suite struct LadderTests {
    @Test func defaultLadderOn720pKeepsAspectRatioWithEvenWidths() {
        let plans = Ladder.default.plan(sourceWidth: 1280, sourceHeight: 720)
        #expect(plans.map(\.rung.name) == ["720p", "480p", "360p", "240p"])
        #expect(plans.map(\.width) == [1280, 854, 640, 426])
        #expect(plans.map(\.height) == [720, 480, 360, 240])
        #expect(plans.map(\.rung.videoBitRate) == [2_800_000, 1_400_000, 800_000, 400_000])
    }

    @Test func rungsAboveTheSourceAreSkipped() {
        let plans = Ladder.default.plan(sourceWidth: 640, sourceHeight: 360)
        #expect(plans.map(\.rung.name) == ["360p", "240p"])
        #expect(Ladder.default.plan(sourceWidth: 320, sourceHeight: 180).isEmpty)
        #expect(Ladder.default.plan(sourceWidth: 0, sourceHeight: 720).isEmpty)
    }

    @Test func portraitAndOddSizesStayEven() {
        // A 9:16 phone stream: 720 wide, 1280 high.
        let portrait = Ladder.default.plan(sourceWidth: 720, sourceHeight: 1280)
        #expect(portrait.map(\.width) == [406, 270, 202, 136])
        let odd = Ladder(rungs: [LadderRung(name: "odd", height: 301, videoBitRate: 500_000)]).plan(sourceWidth: 1000, sourceHeight: 563)
        #expect(odd.map(\.height) == [300])
        #expect(odd.allSatisfy { $0.width % 2 == 0 && $0.height % 2 == 0 })
    }

    @Test func invalidAndDuplicateRungsAreSkipped() {
        let ladder = Ladder(rungs: [
            LadderRung(name: "a", height: 480, videoBitRate: 1_000_000),
            LadderRung(name: "a", height: 360, videoBitRate: 800_000),
            LadderRung(name: "zero", height: 0, videoBitRate: 800_000),
            LadderRung(name: "free", height: 240, videoBitRate: 0),
        ])
        #expect(ladder.plan(sourceWidth: 1280, sourceHeight: 720).map(\.rung.name) == ["a"])
    }
}

@Suite struct InboxStateTests {
    static func video(_ timestamp: Int64, key: Bool) -> MediaFrame {
        MediaFrame(kind: .video, timestamp: timestamp, isKeyframe: key, payload: ByteBuffer(bytes: [key ? 0x17 : 0x27, 1, 0, 0, 0]))
    }

    static func audio(_ timestamp: Int64) -> MediaFrame {
        MediaFrame(kind: .audio, timestamp: timestamp, payload: ByteBuffer(bytes: [0xAF, 1, 0]))
    }

    @Test func fullQueueDropsToTheNextKeyframeAndCountsLag() {
        var inbox = InboxState(capacity: 3)
        #expect(inbox.offer(Self.video(0, key: true)) == .queued)
        #expect(inbox.offer(Self.video(33, key: false)) == .queued)
        #expect(inbox.offer(Self.audio(40)) == .queued)
        #expect(inbox.offer(Self.video(66, key: false)) == .queued)
        // Full: this P-frame and the rest of its GOP go.
        #expect(inbox.offer(Self.video(100, key: false)) == .dropped)
        #expect(inbox.offer(Self.audio(110)) == .queued)
        #expect(inbox.offer(Self.video(133, key: false)) == .dropped)
        #expect(inbox.lagDroppedFrames == 2)
        // The next keyframe replaces the stale GOP; audio stays.
        #expect(inbox.offer(Self.video(1000, key: true)) == .queuedReplacing(3))
        #expect(inbox.lagDroppedFrames == 5)
        #expect(inbox.take().map(\.timestamp) == [40, 110, 1000])
        // After taking, the worker has caught up: frames queue again.
        #expect(inbox.offer(Self.video(1033, key: false)) == .queued)
    }

    @Test func skippingAfterTakeStillWaitsForAKeyframe() {
        var inbox = InboxState(capacity: 1)
        _ = inbox.offer(Self.video(0, key: true))
        #expect(inbox.offer(Self.video(33, key: false)) == .dropped)
        _ = inbox.take()
        // 66 depends on 33, which was dropped.
        #expect(inbox.offer(Self.video(66, key: false)) == .dropped)
        #expect(inbox.offer(Self.video(1000, key: true)) == .queued)
    }

    @Test func endedInboxRefusesFrames() {
        var inbox = InboxState(capacity: 2)
        inbox.end()
        #expect(inbox.offer(Self.audio(0)) == .dropped)
        #expect(inbox.lagDroppedFrames == 0)
    }
}

@Suite struct InterleaverTests {
    static func frame(_ kind: MediaKind, _ timestamp: Int64) -> MediaFrame {
        MediaFrame(kind: kind, timestamp: timestamp, payload: ByteBuffer(bytes: [0]))
    }

    @Test func audioWaitsForVideoOfTheSameInstant() {
        var interleaver = Interleaver(maximumAudioLead: 1000)
        #expect(interleaver.audio(Self.frame(.audio, 0)).isEmpty)
        #expect(interleaver.audio(Self.frame(.audio, 23)).isEmpty)
        #expect(interleaver.audio(Self.frame(.audio, 46)).isEmpty)
        #expect(interleaver.video(Self.frame(.video, 33)).map(\.timestamp) == [0, 23, 33])
        #expect(interleaver.video(Self.frame(.video, 66)).map(\.timestamp) == [46, 66])
        // Audio already behind the video goes out at once.
        #expect(interleaver.audio(Self.frame(.audio, 60)).map(\.timestamp) == [60])
        #expect(interleaver.audio(Self.frame(.audio, 83)).isEmpty)
        #expect(interleaver.drain().map(\.timestamp) == [83])
    }

    @Test func audioIsNotHeldBeyondTheLead() {
        var interleaver = Interleaver(maximumAudioLead: 100)
        var released: [Int64] = []
        for timestamp in stride(from: Int64(0), through: 230, by: 23) {
            released += interleaver.audio(Self.frame(.audio, timestamp)).map(\.timestamp)
        }
        #expect(released == [0, 23, 46, 69, 92, 115])
    }
}
