/// Bounds the chunk decoder enforces on values the peer controls.
public struct ChunkLimits: Sendable {
    /// The largest audio, video or aggregate message body accepted, checked from the message
    /// header before any byte of the body is buffered. Measured (`scripts/measure-message-sizes.sh`,
    /// docs/benchmarks.md): the largest message real encoders sent was a 4K60 50 Mbit/s
    /// keyframe of 5.7 MiB (ffmpeg, x264, a detailed still picture), and a CBR encoder's ceiling
    /// is its VBV buffer, 11.9 MiB for ffmpeg's common `-b:v 50M -bufsize 100M`. 16 MiB, the
    /// 24-bit length field's own maximum, is 1.3 times that ceiling and 2.8 times the largest
    /// seen; gortmplib's 10 MiB is below the ceiling and nginx-rtmp's 1 MiB below a 4K keyframe.
    /// A declared length costs nothing until its bytes arrive.
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

    /// The most bytes of storage held for unfinished messages at once, summed over all chunk
    /// streams (charged as bytes arrive, in the power-of-two buffers they fill). An encoder
    /// has one video message in reassembly at a time (its audio messages fit in a chunk):
    /// 24 MiB holds a maximum-size message (16 MiB) and, for Enhanced RTMP multitrack, a second
    /// track's largest measured 4K keyframe (5.7 MiB, 8 MiB of storage).
    public var maxBufferedBytes: Int = 24 * 1024 * 1024

    /// The most bytes in reassembly on a connection that has not asked to publish
    /// (``ChunkDecoder/acceptsMedia`` false): its messages are commands of a few hundred bytes,
    /// and every message is held to ``maxCommandMessageSize`` meanwhile.
    public var maxBufferedBytesWithoutMedia: Int = 256 * 1024

    /// The node-wide bound on bytes in reassembly, shared by every connection's decoder
    /// (nil: none). Storage is charged as bytes arrive and returned as a message completes, is
    /// aborted or its connection closes; when it runs short the costliest holder is shed.
    public var nodeBudget: ReassemblyBudget?

    /// Creates limits; every parameter defaults to the documented value.
    public init(
        maxMessageSize: Int = 16 * 1024 * 1024,
        maxCommandMessageSize: Int = 64 * 1024,
        maxDataMessageSize: Int = 1024 * 1024,
        maxChunkSize: Int = 65536,
        maxChunkStreams: Int = 64,
        maxBufferedBytes: Int = 24 * 1024 * 1024,
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
