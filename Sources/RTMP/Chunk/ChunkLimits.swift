/// Bounds the chunk decoder enforces on values the peer controls.
public struct ChunkLimits: Sendable {
    /// The largest audio, video or aggregate message body accepted, checked from the message
    /// header before any byte of the body is buffered. 16 MiB is above anything a live encoder
    /// sends (a 4K keyframe is a few MiB) and also above the 24-bit length field's maximum
    /// (16777215), so by default it only matters when lowered. gortmplib uses 10 MiB.
    public var maxMessageSize: Int = 16 * 1024 * 1024

    /// The largest command, protocol control or shared object message (types 1 to 7, 16, 17,
    /// 19, 20). A `connect` from OBS or ffmpeg is a few hundred bytes and Flash's about 1 KiB;
    /// 64 KiB refuses a 16 MiB command at its header, before it is buffered or decoded.
    public var maxCommandMessageSize: Int = 64 * 1024

    /// The largest data message (types 15 and 18: `@setDataFrame`, cue points). Metadata has a
    /// smaller limit of its own, checked after reassembly, over which it is dropped and the
    /// stream goes on; this one bounds what is buffered at all, and closes the connection.
    public var maxDataMessageSize: Int = 1024 * 1024

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

    /// The node-wide bound on bytes in reassembly, shared by every connection's decoder
    /// (nil: none). Declared lengths are reserved as a message starts and returned as it
    /// completes, is aborted or its connection closes.
    public var nodeBudget: ReassemblyBudget?

    /// Creates limits; every parameter defaults to the documented value.
    public init(
        maxMessageSize: Int = 16 * 1024 * 1024,
        maxCommandMessageSize: Int = 64 * 1024,
        maxDataMessageSize: Int = 1024 * 1024,
        maxChunkSize: Int = 65536,
        maxChunkStreams: Int = 64,
        maxBufferedBytes: Int = 32 * 1024 * 1024,
        nodeBudget: ReassemblyBudget? = nil
    ) {
        self.maxMessageSize = maxMessageSize
        self.maxCommandMessageSize = maxCommandMessageSize
        self.maxDataMessageSize = maxDataMessageSize
        self.maxChunkSize = maxChunkSize
        self.maxChunkStreams = maxChunkStreams
        self.maxBufferedBytes = maxBufferedBytes
        self.nodeBudget = nodeBudget
    }

    /// The largest body accepted for a message of this type.
    public func maxSize(ofType typeID: UInt8) -> Int {
        switch MessageType(rawValue: typeID) {
        case .audio, .video, .aggregate: self.maxMessageSize
        case .dataAMF0, .dataAMF3: min(self.maxDataMessageSize, self.maxMessageSize)
        default: min(self.maxCommandMessageSize, self.maxMessageSize)
        }
    }
}
