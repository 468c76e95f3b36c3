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
///
/// The tag header is parsed once, where the frame enters the process (RTMP ingest, the
/// cluster bus, an FLV reader: `classified(kind:timestamp:payload:)`) or is made (the
/// encoders), and travels with the frame as `tagHeader`. Everything downstream (the bus
/// encoder, the HLS muxer, the transcoder's decoders) reads the codec, the composition
/// time and where the codec data starts from it instead of parsing the bytes again.
public struct MediaFrame: Sendable {
    /// A parsed FLV audio or video tag header.
    public enum TagHeader: Sendable, Equatable {
        case video(VideoTagHeader)
        case audio(AudioTagHeader)
    }

    // Declared in this order so the frame packs into 48 bytes, as before it carried its
    // header: the three one-byte fields and the 10-byte header share the first 16 bytes.
    // Every viewer's queue holds a copy of each frame (a `HubPacket`), so size is per viewer.
    public var kind: MediaKind
    /// True for a video frame a decoder can start from (an IDR/IRAP picture).
    public var isKeyframe: Bool
    /// True for a codec configuration record (AVC/HEVC decoder configuration, AAC
    /// AudioSpecificConfig) rather than coded media.
    public var isSequenceHeader: Bool
    /// True for the first audio or video frame after the stream's timeline was re-based
    /// (`TimestampNormalizer`): a new publisher took over, or the publisher's clock jumped.
    /// The timeline stays continuous, but the media is not: HLS marks the segment it
    /// starts with EXT-X-DISCONTINUITY instead of joining the two silently.
    public var isDiscontinuity = false
    /// The tag header read from `payload` where the frame was made; nil for script data
    /// and for a frame built from flags alone (`init(kind:timestamp:isKeyframe:...)`),
    /// whose header is parsed on demand.
    public let tagHeader: TagHeader?
    /// Decode timestamp (DTS) in milliseconds on the stream's timeline (after normalisation).
    public var timestamp: Int64
    /// Immutable so that `tagHeader` always describes it.
    public let payload: ByteBuffer

    /// A frame whose producer vouches for its flags; the header is not parsed here (it is,
    /// on demand, by `videoTagHeader()` / `audioTagHeader()`).
    public init(kind: MediaKind, timestamp: Int64, isKeyframe: Bool = false, isSequenceHeader: Bool = false, payload: ByteBuffer) {
        self.kind = kind
        self.timestamp = timestamp
        self.isKeyframe = isKeyframe
        self.isSequenceHeader = isSequenceHeader
        self.tagHeader = nil
        self.payload = payload
    }

    /// A video frame whose header is already known; the flags come from it.
    public init(timestamp: Int64, video header: VideoTagHeader, payload: ByteBuffer) {
        self.kind = .video
        self.timestamp = timestamp
        self.isKeyframe = header.isKeyframe
        self.isSequenceHeader = header.isSequenceHeader
        self.tagHeader = .video(header)
        self.payload = payload
    }

    /// An audio frame whose header is already known; the flags come from it.
    public init(timestamp: Int64, audio header: AudioTagHeader, payload: ByteBuffer) {
        self.kind = .audio
        self.timestamp = timestamp
        self.isKeyframe = false
        self.isSequenceHeader = header.isSequenceHeader
        self.tagHeader = .audio(header)
        self.payload = payload
    }
}
