import Media
import NIOCore

/// The fixed header in front of every media message on the bus (one per fragment).
///
/// Layout, 36 bytes, big-endian (see docs/cluster.md):
///
/// | offset | size | field |
/// | --- | --- | --- |
/// | 0 | 1 | magic `0xEB` |
/// | 1 | 1 | version (1) |
/// | 2 | 1 | kind: 8 audio, 9 video, 18 script (the FLV tag type) |
/// | 3 | 1 | flags: bit 0 keyframe, bit 1 sequence header, bit 2 discontinuity (the publisher's timeline was re-based before this frame), bit 3 own clock (the publication's timeline is its publisher's own: a new epoch on the subject may start anywhere, and receivers continue their timeline across it); others 0 |
/// | 4 | 4 | stream epoch |
/// | 8 | 8 | sequence number of the frame (all fragments share it) |
/// | 16 | 8 | dts, milliseconds, signed |
/// | 24 | 4 | pts − dts, milliseconds, signed (informational: the FLV body carries it too) |
/// | 28 | 2 | fragment index |
/// | 30 | 2 | fragment count (≥ 1) |
/// | 32 | 4 | length of the whole frame body (all fragments) |
///
/// The fragment's slice of the FLV tag body follows.
public struct MediaBusFrameHeader: Sendable, Equatable {
    public static let magic: UInt8 = 0xEB
    public static let version: UInt8 = 1
    public static let size = 36

    static let keyframeFlag: UInt8 = 0x01
    static let sequenceHeaderFlag: UInt8 = 0x02
    static let discontinuityFlag: UInt8 = 0x04
    static let ownClockFlag: UInt8 = 0x08
    static let knownFlags: UInt8 = keyframeFlag | sequenceHeaderFlag | discontinuityFlag | ownClockFlag

    public var kind: MediaKind
    public var isKeyframe: Bool
    public var isSequenceHeader: Bool
    /// `MediaFrame.isDiscontinuity`.
    public var isDiscontinuity = false
    /// The publication's timeline is its publisher's own (an ingest's publisher session,
    /// whose clock starts where its encoder's does), not one it continues (a transcoder's
    /// rung, on its source's timeline even when the job moves). A receiver that sees a new
    /// epoch with this flag re-bases it to continue what it has: an encoder that moved to
    /// another ingest starts its clock again.
    public var hasOwnClock = false
    /// Changes when the publisher changes (a new ingest session); the receiver restarts
    /// its sequence tracking on a new epoch.
    public var epoch: UInt32
    /// Consecutive per frame within an epoch; a jump is a lost frame.
    public var sequence: UInt64
    /// Decode timestamp in milliseconds (`MediaFrame.timestamp`).
    public var timestamp: Int64
    /// PTS − DTS in milliseconds, 0 where the payload has none.
    public var compositionTime: Int32
    public var fragmentIndex: UInt16
    public var fragmentCount: UInt16
    /// Length of the whole frame body, across all fragments.
    public var frameLength: UInt32

    public init(
        kind: MediaKind,
        isKeyframe: Bool,
        isSequenceHeader: Bool,
        epoch: UInt32,
        sequence: UInt64,
        timestamp: Int64,
        compositionTime: Int32,
        fragmentIndex: UInt16 = 0,
        fragmentCount: UInt16 = 1,
        frameLength: UInt32
    ) {
        self.kind = kind
        self.isKeyframe = isKeyframe
        self.isSequenceHeader = isSequenceHeader
        self.epoch = epoch
        self.sequence = sequence
        self.timestamp = timestamp
        self.compositionTime = compositionTime
        self.fragmentIndex = fragmentIndex
        self.fragmentCount = fragmentCount
        self.frameLength = frameLength
    }

    /// Reads a header from `buffer`, leaving the reader index at the fragment body.
    /// Validates everything the header alone can tell; nothing is consumed on failure.
    public init(from buffer: inout ByteBuffer) throws(MediaBusFrameError) {
        guard buffer.readableBytes >= Self.size else {
            if let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self), first != Self.magic {
                throw .badMagic(first)
            }
            throw .truncated(needed: Self.size, available: buffer.readableBytes)
        }
        var reader = buffer
        // The length was checked above, so these reads cannot come back nil; the guard
        // keeps the code free of force unwraps all the same.
        guard let magic = reader.readInteger(as: UInt8.self),
              let version = reader.readInteger(as: UInt8.self),
              let kindByte = reader.readInteger(as: UInt8.self),
              let flags = reader.readInteger(as: UInt8.self),
              let epoch = reader.readInteger(as: UInt32.self),
              let sequence = reader.readInteger(as: UInt64.self),
              let timestamp = reader.readInteger(as: Int64.self),
              let compositionTime = reader.readInteger(as: Int32.self),
              let fragmentIndex = reader.readInteger(as: UInt16.self),
              let fragmentCount = reader.readInteger(as: UInt16.self),
              let frameLength = reader.readInteger(as: UInt32.self)
        else {
            throw .truncated(needed: Self.size, available: buffer.readableBytes)
        }
        guard magic == Self.magic else { throw .badMagic(magic) }
        guard version == Self.version else { throw .unsupportedVersion(version) }
        guard let kind = MediaKind(rawValue: kindByte) else { throw .unknownKind(kindByte) }
        guard flags & ~Self.knownFlags == 0 else { throw .unknownFlags(flags) }
        guard fragmentCount > 0, fragmentIndex < fragmentCount else {
            throw .badFragment(index: fragmentIndex, count: fragmentCount)
        }
        self.init(
            kind: kind,
            isKeyframe: flags & Self.keyframeFlag != 0,
            isSequenceHeader: flags & Self.sequenceHeaderFlag != 0,
            epoch: epoch,
            sequence: sequence,
            timestamp: timestamp,
            compositionTime: compositionTime,
            fragmentIndex: fragmentIndex,
            fragmentCount: fragmentCount,
            frameLength: frameLength
        )
        self.isDiscontinuity = flags & Self.discontinuityFlag != 0
        self.hasOwnClock = flags & Self.ownClockFlag != 0
        buffer = reader
    }

    /// Appends the 36 header bytes.
    public func write(into buffer: inout ByteBuffer) {
        var flags: UInt8 = 0
        if isKeyframe { flags |= Self.keyframeFlag }
        if isSequenceHeader { flags |= Self.sequenceHeaderFlag }
        if isDiscontinuity { flags |= Self.discontinuityFlag }
        if hasOwnClock { flags |= Self.ownClockFlag }
        buffer.writeInteger(Self.magic)
        buffer.writeInteger(Self.version)
        buffer.writeInteger(kind.rawValue)
        buffer.writeInteger(flags)
        buffer.writeInteger(epoch)
        buffer.writeInteger(sequence)
        buffer.writeInteger(timestamp)
        buffer.writeInteger(compositionTime)
        buffer.writeInteger(fragmentIndex)
        buffer.writeInteger(fragmentCount)
        buffer.writeInteger(frameLength)
    }
}
