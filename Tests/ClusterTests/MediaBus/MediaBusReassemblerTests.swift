import Media
import NIOCore
import Testing

@testable import Cluster

@Suite struct MediaBusReassemblerTests {
    /// Encodes frames with one encoder, as a publisher would.
    static func encode(_ frames: [MediaFrame], maxMessageBytes: Int = 1 << 20, epoch: UInt32 = 7, hasOwnClock: Bool = false) throws -> [[ByteBuffer]] {
        var encoder = MediaBusFrameEncoder(epoch: epoch, maxMessageBytes: maxMessageBytes, hasOwnClock: hasOwnClock)
        return try frames.map { try encoder.encode($0) }
    }

    /// Feeds messages, returning the frames that came out.
    static func feed(_ messages: [ByteBuffer], into reassembler: inout MediaBusReassembler) throws -> [FrameSnapshot] {
        try messages.compactMap { try reassembler.receive($0) }.map(FrameSnapshot.init)
    }

    @Test func everyKindOfFrameRoundTrips() throws {
        let frames = [
            Frames.script(), Frames.videoSequenceHeader(),
            Frames.video(timestamp: 0, keyframe: true), Frames.audio(timestamp: 10),
            Frames.video(timestamp: 33, keyframe: false), Frames.audio(timestamp: -5),
        ]
        let messages = try Self.encode(frames)
        #expect(messages.allSatisfy { $0.count == 1 })
        var reassembler = MediaBusReassembler()
        let received = try Self.feed(messages.flatMap { $0 }, into: &reassembler)
        #expect(received == frames.map(FrameSnapshot.init))
        #expect(reassembler.statistics.gaps == 0)
    }

    /// Bus input is not trusted: the flags are read from the payload, and what RTMP ingest
    /// would refuse (an empty tag, a garbage configuration record) is dropped and counted.
    @Test func invalidFramesAreDroppedAndFlagsComeFromThePayload() throws {
        let garbageHeader = MediaFrame(kind: .video, timestamp: 0, isKeyframe: true, isSequenceHeader: true, payload: ByteBuffer(bytes: [0x17, 0x00, 0, 0, 0, 0x01, 0x64, 0x00, 0x1F, 0xFF]))
        let empty = MediaFrame(kind: .audio, timestamp: 1, payload: ByteBuffer())
        // Sent as a plain frame, but the payload is an AAC sequence header: it is one.
        let mislabelled = MediaFrame(kind: .audio, timestamp: 2, payload: ByteBuffer(bytes: [0xAF, 0x00, 0x12, 0x10]))
        let messages = try Self.encode([garbageHeader, empty, mislabelled, Frames.audio(timestamp: 3)])
        var reassembler = MediaBusReassembler()
        let received = try Self.feed(messages.flatMap { $0 }, into: &reassembler)
        #expect(received.map(\.timestamp) == [2, 3])
        #expect(received.first?.isSequenceHeader == true)
        #expect(reassembler.statistics.invalidFrames == 2)
    }

    @Test func headerCarriesSequenceEpochAndCompositionTime() throws {
        let messages = try Self.encode([Frames.videoSequenceHeader(), Frames.video(timestamp: 40, keyframe: true, composition: 80)], epoch: 9)
        var second = messages[1][0]
        let header = try MediaBusFrameHeader(from: &second)
        #expect(header.epoch == 9)
        #expect(header.sequence == 1)
        #expect(header.timestamp == 40)
        #expect(header.compositionTime == 80)
        #expect(header.isKeyframe && !header.isSequenceHeader)
    }

    @Test func threeMebibyteFrameIsSplitAndReassembled() throws {
        let big = Frames.video(timestamp: 1000, keyframe: true, size: 3 << 20, seed: 5)
        let messages = try Self.encode([big, Frames.video(timestamp: 1033, keyframe: false)], maxMessageBytes: 1 << 20)
        #expect(messages[0].count == 4)  // 3 MiB + 5 bytes of tag header, < 1 MiB - 36 per message
        #expect(messages[0].allSatisfy { $0.readableBytes <= 1 << 20 })
        var reassembler = MediaBusReassembler()
        var out: [FrameSnapshot] = []
        for (index, message) in messages[0].enumerated() {
            let frame = try reassembler.receive(message)
            #expect((frame == nil) == (index < 3))
            if let frame { out.append(FrameSnapshot(frame)) }
        }
        out += try Self.feed(messages[1], into: &reassembler)
        #expect(out.count == 2)
        #expect(out.first == FrameSnapshot(big))
        #expect(reassembler.statistics.frames == 2)
        #expect(reassembler.statistics.gaps == 0)
    }

    @Test func gapDropsFramesUntilTheNextKeyframe() throws {
        let frames = [
            Frames.videoSequenceHeader(),                       // 0
            Frames.video(timestamp: 0, keyframe: true),        // 1
            Frames.video(timestamp: 33, keyframe: false),      // 2 lost
            Frames.video(timestamp: 66, keyframe: false),      // 3 dropped: its reference is gone
            Frames.audio(timestamp: 70),                       // 4 dropped: waits with the video
            Frames.videoSequenceHeader(timestamp: 80),         // 5 passes: configuration
            Frames.script(timestamp: 90),                      // 6 passes: configuration
            Frames.video(timestamp: 100, keyframe: true),      // 7 resumes
            Frames.video(timestamp: 133, keyframe: false),     // 8
            Frames.audio(timestamp: 140),                      // 9
        ]
        var messages = try Self.encode(frames)
        messages.remove(at: 2)
        var reassembler = MediaBusReassembler()
        let out = try Self.feed(messages.flatMap { $0 }, into: &reassembler)
        #expect(out.map(\.timestamp) == [0, 0, 80, 90, 100, 133, 140])
        #expect(reassembler.statistics.gaps == 1)
        #expect(reassembler.statistics.droppedFrames == 2)
    }

    /// A receiver that refills gaps itself (a relay, from the publisher's GOP) gets the
    /// frames after a gap at once; the gap is still counted.
    @Test func aReceiverThatRefillsGapsGetsTheFramesAfterOneAtOnce() throws {
        let frames = [
            Frames.videoSequenceHeader(),
            Frames.video(timestamp: 0, keyframe: true),
            Frames.video(timestamp: 33, keyframe: false),      // lost
            Frames.video(timestamp: 66, keyframe: false),
            Frames.audio(timestamp: 70),
        ]
        var messages = try Self.encode(frames)
        messages.remove(at: 2)
        var reassembler = MediaBusReassembler(refillsGaps: true)
        let out = try Self.feed(messages.flatMap { $0 }, into: &reassembler)
        #expect(out.map(\.timestamp) == [0, 0, 66, 70])
        #expect(reassembler.statistics.gaps == 1)
        #expect(reassembler.statistics.droppedFrames == 0)
    }

    @Test func lostFragmentDiscardsTheFrameAndResumesAtTheNextKeyframe() throws {
        let frames = [
            Frames.video(timestamp: 0, keyframe: true, size: 1900),
            Frames.video(timestamp: 33, keyframe: false, size: 1900),
            Frames.video(timestamp: 66, keyframe: false, size: 100),
            Frames.video(timestamp: 100, keyframe: true, size: 2000),
        ]
        var messages = try Self.encode(frames, maxMessageBytes: 1036)
        #expect(messages[1].count == 2)
        messages[1].removeLast()  // the second half of frame 1 never arrives
        var reassembler = MediaBusReassembler()
        let out = try Self.feed(messages.flatMap { $0 }, into: &reassembler)
        #expect(out.map(\.timestamp) == [0, 100])
        #expect(out.last == FrameSnapshot(frames[3]))
        #expect(reassembler.statistics.gaps == 1)
        #expect(reassembler.statistics.incompleteFrames == 1)
        #expect(reassembler.statistics.droppedFrames == 1)
    }

    @Test func audioOnlyStreamResumesAtOnceAfterAGap() throws {
        var messages = try Self.encode((0..<5).map { Frames.audio(timestamp: Int64($0) * 23) })
        messages.remove(at: 2)
        var reassembler = MediaBusReassembler()
        let out = try Self.feed(messages.flatMap { $0 }, into: &reassembler)
        #expect(out.map(\.timestamp) == [0, 23, 69, 92])
        #expect(reassembler.statistics.gaps == 1)
    }

    @Test func lateJoinerStartsAtAKeyframeWithoutCountingAGap() throws {
        let frames = [
            Frames.video(timestamp: 0, keyframe: true), Frames.video(timestamp: 33, keyframe: false),
            Frames.video(timestamp: 66, keyframe: false), Frames.video(timestamp: 100, keyframe: true),
        ]
        let messages = try Self.encode(frames)
        var reassembler = MediaBusReassembler()
        let out = try Self.feed(messages.dropFirst().flatMap { $0 }, into: &reassembler)
        #expect(out.map(\.timestamp) == [100])
        #expect(reassembler.statistics.gaps == 0)
    }

    @Test func newEpochRestartsSequenceTracking() throws {
        let first = try Self.encode([Frames.video(timestamp: 0, keyframe: true), Frames.video(timestamp: 33, keyframe: false)], epoch: 1)
        let second = try Self.encode([Frames.video(timestamp: 66, keyframe: true), Frames.video(timestamp: 99, keyframe: false)], epoch: 2)
        var reassembler = MediaBusReassembler()
        let out = try Self.feed((first + second).flatMap { $0 }, into: &reassembler)
        #expect(out.map(\.timestamp) == [0, 33, 66, 99])
        #expect(reassembler.statistics.gaps == 0)
    }

    /// A handover: the new publisher's keyframe arrives before the old one's last frame.
    /// The straggler is dropped; switching back would have cost the new publisher's frames
    /// up to its next keyframe.
    @Test func theReplacedEpochsStragglersAreDroppedWithoutLosingTheNewPublisher() throws {
        let old = try Self.encode([Frames.video(timestamp: 0, keyframe: true), Frames.video(timestamp: 33, keyframe: false), Frames.video(timestamp: 66, keyframe: false)], epoch: 1)
        let new = try Self.encode([Frames.video(timestamp: 100, keyframe: true), Frames.video(timestamp: 133, keyframe: false), Frames.video(timestamp: 166, keyframe: false)], epoch: 2)
        var reassembler = MediaBusReassembler()
        let out = try Self.feed([old[0], old[1], new[0], old[2], new[1], new[2]].flatMap { $0 }, into: &reassembler)
        #expect(out.map(\.timestamp) == [0, 33, 100, 133, 166])
        #expect(reassembler.statistics.staleFrames == 1)
        #expect(reassembler.statistics.gaps == 0)
    }

    /// Past the allowance, the replaced publisher counts as live again (two publishers
    /// alternating is a fault elsewhere, but neither is starved for ever).
    @Test func aReplacedEpochThatKeepsPublishingIsTakenBackAfterTheAllowance() throws {
        let new = try Self.encode([Frames.video(timestamp: 0, keyframe: true)], epoch: 2)
        let old = try Self.encode((0...MediaBusReassembler.stragglerAllowance).map { Frames.video(timestamp: Int64(1000 + $0 * 33), keyframe: $0 == MediaBusReassembler.stragglerAllowance) }, epoch: 1)
        var reassembler = MediaBusReassembler()
        let first = try Self.encode([Frames.video(timestamp: 0, keyframe: true)], epoch: 1)
        let out = try Self.feed((first + new + old).flatMap { $0 }, into: &reassembler)
        #expect(out.count == 3)
        #expect(reassembler.statistics.staleFrames == UInt64(MediaBusReassembler.stragglerAllowance))
    }

    /// An encoder that moved to another ingest: a new epoch of a publication with its own
    /// clock. Its first media frame (after the keyframe wait) is flagged for re-basing; the
    /// first epoch is not (it continues the GOP the receiver fetched), nor is a new epoch of
    /// a publication that continues another's timeline (a moved transcoder's rung).
    @Test func aNewEpochWithItsOwnClockIsFlaggedOnItsFirstMediaFrame() throws {
        let first = try Self.encode([Frames.video(timestamp: 5000, keyframe: true), Frames.video(timestamp: 5033, keyframe: false)], epoch: 1, hasOwnClock: true)
        let moved = try Self.encode([Frames.video(timestamp: 0, keyframe: false), Frames.video(timestamp: 33, keyframe: true), Frames.video(timestamp: 66, keyframe: false)], epoch: 2, hasOwnClock: true)
        var reassembler = MediaBusReassembler()
        var flagged: [Int64] = []
        for message in (first + moved).flatMap({ $0 }) {
            if let frame = try reassembler.receive(message), reassembler.startsNewClock { flagged.append(frame.timestamp) }
        }
        // The P-frame before the new session's keyframe is dropped; the keyframe is flagged.
        #expect(flagged == [33])
        #expect(reassembler.currentEpoch == 2)
        let rung = try Self.encode([Frames.video(timestamp: 5100, keyframe: true)], epoch: 3)
        var rungs = MediaBusReassembler()
        var rungFlagged = 0
        for message in (first + rung).flatMap({ $0 }) where try rungs.receive(message) != nil && rungs.startsNewClock {
            rungFlagged += 1
        }
        #expect(rungFlagged == 0)
    }

    @Test func aDiscontinuityCrossesTheBus() throws {
        var marked = Frames.video(timestamp: 33, keyframe: false)
        marked.isDiscontinuity = true
        let messages = try Self.encode([Frames.video(timestamp: 0, keyframe: true), marked])
        var reassembler = MediaBusReassembler()
        let out = try Self.feed(messages.flatMap { $0 }, into: &reassembler)
        #expect(out.map(\.isDiscontinuity) == [false, true])
    }

    @Test func oversizedFrameIsRejectedBeforeAnythingIsBuffered() throws {
        let messages = try Self.encode([Frames.video(timestamp: 0, keyframe: true, size: 5000)], maxMessageBytes: 1036)
        var reassembler = MediaBusReassembler(maxFrameBytes: 4096)
        #expect(throws: MediaBusFrameError.oversized(length: 5005, limit: 4096)) {
            try reassembler.receive(messages[0][0])
        }
        #expect(MediaBusFrameError.oversized(length: 1, limit: 0).reason == "oversized")
    }

    @Test func encoderRefusesFramesAboveItsLimit() {
        var encoder = MediaBusFrameEncoder(epoch: 1, maxMessageBytes: 1 << 20, maxFrameBytes: 1000)
        #expect(throws: MediaBusFrameError.oversized(length: 1005, limit: 1000)) {
            try encoder.encode(Frames.video(timestamp: 0, keyframe: true, size: 1000))
        }
        #expect(encoder.nextSequence == 0)
    }

    @Test func bodyLongerThanAnnouncedIsRejected() throws {
        var message = try Self.encode([Frames.audio(timestamp: 0)])[0][0]
        message.writeBytes([1, 2, 3])
        var reassembler = MediaBusReassembler()
        #expect(throws: MediaBusFrameError.lengthMismatch(announced: 34, received: 37)) {
            try reassembler.receive(message)
        }
    }

    @Test func badMessageLeavesReassemblyInProgressIntact() throws {
        let frame = Frames.video(timestamp: 0, keyframe: true, size: 2000)
        let messages = try Self.encode([frame], maxMessageBytes: 1036)[0]
        var reassembler = MediaBusReassembler()
        #expect(try reassembler.receive(messages[0]) == nil)
        #expect(throws: MediaBusFrameError.truncated(needed: 36, available: 3)) {
            try reassembler.receive(ByteBuffer(bytes: [0xEB, 0x01, 0x09]))
        }
        let out = try Self.feed(Array(messages.dropFirst()), into: &reassembler)
        #expect(out == [FrameSnapshot(frame)])
    }
}
