import Media
import NIOCore

/// Serialises a frame once into the RTMP chunks every player receives.
///
/// The bytes must be the same for every viewer, so they are fixed by convention on our
/// side of every play session: chunk size `chunkSize` (announced before any media), message
/// stream id `streamID` (what our `createStream` returns first), one chunk stream per
/// track, and absolute timestamps in a type-0 header on every message. Type-0 headers cost
/// 7 bytes more per message than compressed ones, and buy a zero-copy fan-out.
public struct RTMPChunkSerializer: FrameSerializer {
    public static let chunkSize = 4096
    public static let streamID: UInt32 = 1
    public static let audioChunkStreamID: UInt32 = 4
    public static let videoChunkStreamID: UInt32 = 6
    public static let dataChunkStreamID: UInt32 = 5

    public init() {}

    public var format: OutputFormat { .rtmpChunks }

    public func serialize(_ frame: MediaFrame, allocator: ByteBufferAllocator) -> ByteBuffer {
        Self.serialize(frame, streamID: Self.streamID, chunkSize: Self.chunkSize, allocator: allocator)
    }

    public static func chunkStreamID(for kind: MediaKind) -> UInt32 {
        switch kind {
        case .audio: audioChunkStreamID
        case .video: videoChunkStreamID
        case .script: dataChunkStreamID
        }
    }

    /// The general form, also used for a player on another message stream id.
    public static func serialize(_ frame: MediaFrame, streamID: UInt32, chunkSize: Int, allocator: ByteBufferAllocator) -> ByteBuffer {
        // RTMP cannot carry a message over 24 bits. Ingest bounds every frame well below it;
        // a frame from elsewhere (the bus, a transcoder) that is not is skipped for RTMP
        // players, never handed to the encoder's precondition.
        guard frame.payload.readableBytes <= 0xFFFFFF else { return allocator.buffer(capacity: 0) }
        let message = RTMPMessage(
            typeID: frame.kind.rawValue,
            streamID: streamID,
            timestamp: UInt32(truncatingIfNeeded: frame.timestamp),
            chunkStreamID: chunkStreamID(for: frame.kind),
            payload: frame.payload
        )
        let payloadSize = frame.payload.readableBytes
        let chunks = max(1, (payloadSize + chunkSize - 1) / chunkSize)
        var buffer = allocator.buffer(capacity: payloadSize + 18 + chunks * 5)
        var encoder = ChunkEncoder()
        encoder.chunkSize = chunkSize
        encoder.encode(message, into: &buffer)
        return buffer
    }
}
