/// Why a media bus message was rejected. Each case says what was wrong with the numbers
/// that were read; `reason` groups them for the dropped-messages metric.
public enum MediaBusFrameError: Error, Equatable {
    /// The message ends before its header does.
    case truncated(needed: Int, available: Int)
    /// The first byte is not `MediaBusFrameHeader.magic`: not a media frame at all.
    case badMagic(UInt8)
    /// A header version this build does not speak; mixed versions fail loudly.
    case unsupportedVersion(UInt8)
    /// The frame announces more bytes than the receiver's bound (or the encoder's).
    case oversized(length: Int, limit: Int)
    /// A kind byte that is none of audio (8), video (9), script (18).
    case unknownKind(UInt8)
    /// Flag bits this version does not define.
    case unknownFlags(UInt8)
    /// Fragment numbering that cannot be: count 0, index past count.
    case badFragment(index: UInt16, count: UInt16)
    /// The fragments' bodies do not add up to the announced frame length.
    case lengthMismatch(announced: Int, received: Int)

    /// The `reason` dimension of `estuary_bus_messages_dropped_total`.
    public var reason: String {
        switch self {
        case .truncated: "truncated"
        case .badMagic, .unsupportedVersion: "version"
        case .oversized: "oversized"
        case .unknownKind, .unknownFlags, .badFragment, .lengthMismatch: "malformed"
        }
    }
}
