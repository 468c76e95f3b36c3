/// Bounds the chunk decoder enforces on values the peer controls.
public struct ChunkLimits: Sendable, Equatable {
    /// The largest message body accepted, checked from the message header before any byte of the
    /// body is buffered. 16 MiB is above anything a live encoder sends (a 4K keyframe is a few
    /// MiB) and also above the 24-bit length field's maximum (16777215), so by default it only
    /// matters when lowered. gortmplib uses 10 MiB.
    public var maxMessageSize: Int = 16 * 1024 * 1024

    /// The largest chunk size a peer may announce with Set Chunk Size. OBS, ffmpeg and
    /// nginx-rtmp use 4096, SRS 60000; 65536 admits all of them while keeping a single chunk
    /// (which is buffered whole in the worst case) small.
    public var maxChunkSize: Int = 65536

    /// The most chunk stream ids a connection may use. Encoders use 3 to 8 (control, command,
    /// audio, video, data); 64 leaves ample room while bounding the per-stream state a peer can
    /// make us keep.
    public var maxChunkStreams: Int = 64

    /// The most message bytes in the middle of reassembly at once, summed over all chunk
    /// streams (by declared length). Bounds memory when a peer interleaves many large messages;
    /// 32 MiB fits two maximum-size messages.
    public var maxBufferedBytes: Int = 32 * 1024 * 1024

    /// Creates limits; every parameter defaults to the documented value.
    public init(
        maxMessageSize: Int = 16 * 1024 * 1024,
        maxChunkSize: Int = 65536,
        maxChunkStreams: Int = 64,
        maxBufferedBytes: Int = 32 * 1024 * 1024
    ) {
        self.maxMessageSize = maxMessageSize
        self.maxChunkSize = maxChunkSize
        self.maxChunkStreams = maxChunkStreams
        self.maxBufferedBytes = maxBufferedBytes
    }
}
