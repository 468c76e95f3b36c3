/// Why FLV bytes (a file header, a tag, or an audio/video tag body header) could not be
/// parsed. Associated values carry the offending values.
public enum FLVError: Error, Equatable, Sendable {
    /// Fewer bytes than a fixed-size field needs.
    case truncated(needed: Int, available: Int)
    /// The file does not start with "FLV"; the three bytes read, big-endian.
    case invalidSignature(UInt32)
    /// An FLV version other than 1.
    case unsupportedVersion(UInt8)
    /// A header `DataOffset` smaller than the 9-byte header or larger than the reader accepts.
    case invalidDataOffset(UInt32)
    /// A tag type byte other than 8 (audio), 9 (video) or 18 (script), or with the
    /// encryption (Filter) bit set.
    case unsupportedTagType(UInt8)
    /// A tag body larger than the configured limit.
    case tagTooLarge(size: Int, limit: Int)
    /// A PreviousTagSize that does not match the tag before it.
    case previousTagSizeMismatch(expected: UInt32, actual: UInt32)
    /// A payload too large for the 24-bit DataSize field.
    case payloadTooLarge(Int)
    /// An audio or video tag with no body.
    case emptyPayload(MediaKind)
    /// A legacy video CodecID other than 7 (AVC) or 12 (HEVC).
    case unsupportedVideoCodecID(UInt8)
    /// An enhanced-RTMP video FourCC other than avc1, hvc1, av01, vp09.
    case unsupportedVideoFourCC(UInt32)
    /// A video FrameType of 0 or above 5.
    case invalidVideoFrameType(UInt8)
    /// A video AVCPacketType / VideoPacketType the specifications do not define.
    case invalidVideoPacketType(UInt8)
    /// A defined video packet type this parser does not handle (Multitrack 6, ModEx 7).
    case unsupportedVideoPacketType(UInt8)
    /// An AACPacketType other than 0 or 1.
    case invalidAACPacketType(UInt8)
    /// An enhanced-RTMP audio FourCC other than mp4a, Opus, fLaC, ac-3, ec-3, .mp3.
    case unsupportedAudioFourCC(UInt32)
    /// An enhanced-RTMP AudioPacketType the specification does not define.
    case invalidAudioPacketType(UInt8)
    /// A defined audio packet type this parser does not handle (Multitrack 5, ModEx 7).
    case unsupportedAudioPacketType(UInt8)
}
