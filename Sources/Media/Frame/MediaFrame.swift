import NIOCore

/// What a frame carries. The raw values are the RTMP message type ids / FLV tag types,
/// so a frame maps to either container without a lookup table.
public enum MediaKind: UInt8, Sendable, Hashable {
    case audio = 8
    case video = 9
    /// AMF0 script data (`onMetaData`).
    case script = 18
}

/// One unit of media on a stream's timeline, as it travels from a publisher through a
/// `StreamHub` to every output.
///
/// `payload` is the FLV tag body (identical to the RTMP audio/video/data message body):
/// for video the 1-byte (or enhanced-RTMP 5-byte) header, the AVC packet type and the
/// composition time, then the NAL units. Copying a frame copies a reference to the
/// payload's storage, never the bytes.
public struct MediaFrame: Sendable {
    public var kind: MediaKind
    /// Decode timestamp in milliseconds on the stream's timeline (after normalisation).
    public var timestamp: Int64
    /// True for a video frame a decoder can start from (an IDR/IRAP picture).
    public var isKeyframe: Bool
    /// True for a codec configuration record (AVC/HEVC decoder configuration, AAC
    /// AudioSpecificConfig) rather than coded media.
    public var isSequenceHeader: Bool
    public var payload: ByteBuffer

    public init(kind: MediaKind, timestamp: Int64, isKeyframe: Bool = false, isSequenceHeader: Bool = false, payload: ByteBuffer) {
        self.kind = kind
        self.timestamp = timestamp
        self.isKeyframe = isKeyframe
        self.isSequenceHeader = isSequenceHeader
        self.payload = payload
    }
}
