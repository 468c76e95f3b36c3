import Media
import NIOCore

/// The receiving side of one media subject: parses bus messages, reassembles fragmented
/// frames, and applies the gap policy.
///
/// **Gap policy.** Within an epoch, frames carry consecutive sequence numbers and their
/// fragments arrive in order (NATS keeps one publisher's order on a subject). A missing
/// sequence number or a missing fragment is a gap: the incomplete frame is discarded, the
/// gap is counted, and media frames are dropped until the next sync point, since a decoder
/// cannot use P-frames whose reference was lost. Sequence headers and script data always
/// pass. Sync points are the same as `StreamHub`'s: a video keyframe, or any audio frame
/// while no video has been seen in the epoch (an audio-only stream resumes at once). Audio
/// that arrives before the first video frame of a late joiner passes; once video has been
/// seen, audio waits with it for the keyframe, so playback starts with both tracks.
/// A receiver that joins mid-stream waits for a sync point the same way, without
/// counting a gap. A new epoch (a new publisher session) restarts the tracking. A receiver
/// that refills gaps itself (`refillsGaps`: a relay fetches the publisher's GOP, which
/// holds the lost frames) gets the frames after a gap at once instead.
///
/// **New clocks.** The first media frame returned of a new epoch whose publication has its
/// own clock (`MediaBusFrameHeader.hasOwnClock`: an ingest's, where an encoder that moved
/// to another ingest starts its clock again), after a first epoch, is flagged
/// (`startsNewClock`), so that the receiver re-bases that epoch to continue its timeline.
///
/// **Bounds.** One frame is reassembled at a time and its announced length is checked
/// against `maxFrameBytes` before any body is kept, so the state holds at most
/// `maxFrameBytes` bytes.
///
/// A value type with mutating state: one per subscription, used on its delivery thread.
public struct MediaBusReassembler: Sendable {
    /// 16 MiB: far above any sane keyframe, small enough that a hostile header cannot make
    /// a relay hold much memory per subscription.
    public static let defaultMaxFrameBytes = 16 << 20

    public struct Statistics: Sendable, Equatable {
        /// Frames returned to the caller.
        public var frames: UInt64 = 0
        /// Sequence gaps and lost fragments detected.
        public var gaps: UInt64 = 0
        /// Complete frames dropped while waiting for a sync point.
        public var droppedFrames: UInt64 = 0
        /// Partially received frames discarded (a fragment was lost).
        public var incompleteFrames: UInt64 = 0
        /// Frames from an earlier sequence number of the current epoch (duplicates, reordering).
        public var staleFrames: UInt64 = 0
        /// Frames whose payload is not a valid tag (empty, malformed header, garbage
        /// configuration record): dropped, as RTMP ingest would refuse them.
        public var invalidFrames: UInt64 = 0

        public init() {}
    }

    private struct Partial: Sendable {
        var header: MediaBusFrameHeader
        var body: ByteBuffer
        var nextIndex: UInt16
    }

    public let maxFrameBytes: Int
    /// Messages of the replaced epoch dropped after a switch (a few seconds of a rung);
    /// past that, that publisher is taken as live again (two publishers alternating).
    static let stragglerAllowance = 256
    public private(set) var statistics = Statistics()

    private var epoch: UInt32?
    /// The epoch followed now (nil before the first message).
    public var currentEpoch: UInt32? { epoch }
    /// Whether the frame the last `receive` returned is the first media frame of a new
    /// epoch with a clock of its own (see the type's comment).
    public private(set) var startsNewClock = false
    /// Set by such an epoch's first message, until its first media frame is returned.
    private var newClockPending = false
    /// The epoch replaced last, and how many more of its messages are dropped as stragglers.
    private var retired: (epoch: UInt32, remaining: Int)?
    private var expectedSequence: UInt64?
    private var partial: Partial?
    private var hasVideo = false
    private var waitingForSyncPoint = true

    /// Whether the first frames are dropped until a sync point (a viewer joining mid-GOP).
    /// False for a subscriber that fetched the GOP up to now by other means (`MediaBusGOP`)
    /// and subscribed before fetching it: what arrives next continues that GOP.
    private let joinsAtSyncPoint: Bool

    /// Whether the frames after a gap are returned at once (the caller refills the gap).
    private let refillsGaps: Bool

    public init(maxFrameBytes: Int = Self.defaultMaxFrameBytes, joinsAtSyncPoint: Bool = true, refillsGaps: Bool = false) {
        self.maxFrameBytes = maxFrameBytes
        self.joinsAtSyncPoint = joinsAtSyncPoint
        self.refillsGaps = refillsGaps
    }

    /// Takes one bus message. Returns a frame when one is complete and passes the gap
    /// policy, nil otherwise. Throws for a message that is not a valid media message;
    /// the reassembly state is then unchanged.
    public mutating func receive(_ message: ByteBuffer) throws(MediaBusFrameError) -> MediaFrame? {
        startsNewClock = false
        var buffer = message
        let header = try MediaBusFrameHeader(from: &buffer)
        let frameLength = Int(header.frameLength)
        guard frameLength <= maxFrameBytes else {
            throw .oversized(length: frameLength, limit: maxFrameBytes)
        }
        let fragmentLength = buffer.readableBytes
        guard fragmentLength <= frameLength else {
            throw .lengthMismatch(announced: frameLength, received: fragmentLength)
        }
        if header.fragmentCount == 1, fragmentLength != frameLength {
            throw .lengthMismatch(announced: frameLength, received: fragmentLength)
        }

        if header.epoch != epoch, let straggler = retired, straggler.epoch == header.epoch, straggler.remaining > 0 {
            // The previous publisher's last messages, arriving after the new one's first (a
            // transcoder handing over at a keyframe, over another connection): switching
            // back would drop the new publisher's frames until its next keyframe.
            retired = (straggler.epoch, straggler.remaining - 1)
            statistics.staleFrames += 1
            return nil
        }
        if header.epoch != epoch {
            // A new publisher session: its sequence numbers start afresh.
            if let epoch { retired = (epoch, Self.stragglerAllowance) }
            if partial != nil {
                statistics.incompleteFrames += 1
            }
            // The first session may continue a GOP fetched separately; a later one is a
            // new publisher, whose stream must start at a sync point.
            waitingForSyncPoint = epoch != nil || joinsAtSyncPoint
            newClockPending = epoch != nil && header.hasOwnClock
            epoch = header.epoch
            expectedSequence = nil
            partial = nil
            hasVideo = false
        }

        if var current = partial {
            partial = nil
            if header.sequence == current.header.sequence, header.fragmentIndex == current.nextIndex,
               header.fragmentCount == current.header.fragmentCount, header.frameLength == current.header.frameLength {
                guard current.body.readableBytes + fragmentLength <= frameLength else {
                    statistics.incompleteFrames += 1
                    registerGap()
                    throw .lengthMismatch(announced: frameLength, received: current.body.readableBytes + fragmentLength)
                }
                current.body.writeImmutableBuffer(buffer)
                current.nextIndex += 1
                guard current.nextIndex == current.header.fragmentCount else {
                    partial = current
                    return nil
                }
                guard current.body.readableBytes == frameLength else {
                    statistics.incompleteFrames += 1
                    registerGap()
                    throw .lengthMismatch(announced: frameLength, received: current.body.readableBytes)
                }
                return complete(current.header, body: current.body)
            }
            // Anything else than the next fragment means the rest of this frame was lost.
            statistics.incompleteFrames += 1
            registerGap()
        }

        if let expected = expectedSequence, header.sequence != expected {
            if header.sequence < expected {
                // Already past it (a duplicate, or the tail of a frame abandoned above).
                statistics.staleFrames += 1
                return nil
            }
            registerGap()
        }
        expectedSequence = header.sequence &+ 1

        guard header.fragmentIndex == 0 else {
            // Joined (or resumed) in the middle of a frame: its beginning is gone.
            if !waitingForSyncPoint {
                registerGap()
            }
            statistics.incompleteFrames += 1
            return nil
        }
        guard header.fragmentCount == 1 else {
            partial = Partial(header: header, body: buffer, nextIndex: 1)
            return nil
        }
        return complete(header, body: buffer)
    }

    private mutating func registerGap() {
        statistics.gaps += 1
        if !refillsGaps {
            waitingForSyncPoint = true
        }
    }

    private mutating func complete(_ header: MediaBusFrameHeader, body: ByteBuffer) -> MediaFrame? {
        // Bus input is re-validated like RTMP input: the flags come from the payload (a
        // sender could set the header's wrong), and configuration records are parsed.
        guard var frame = try? MediaFrame.classified(kind: header.kind, timestamp: header.timestamp, payload: body) else {
            statistics.invalidFrames += 1
            return nil
        }
        frame.isDiscontinuity = header.isDiscontinuity
        if frame.isSequenceHeader {
            do {
                _ = try frame.validatedConfigurationRecord()
            } catch {
                statistics.invalidFrames += 1
                return nil
            }
        }
        if frame.kind == .video {
            hasVideo = true
        }
        let isConfiguration = frame.isSequenceHeader || frame.kind == .script
        if waitingForSyncPoint, !isConfiguration {
            switch frame.kind {
            case .video where frame.isKeyframe:
                waitingForSyncPoint = false
            case .audio where !hasVideo:
                // Audio frames decode on their own; without video there is nothing to wait for.
                break
            default:
                statistics.droppedFrames += 1
                return nil
            }
        }
        if newClockPending, !isConfiguration {
            newClockPending = false
            startsNewClock = true
        }
        statistics.frames += 1
        return frame
    }
}
