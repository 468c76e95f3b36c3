import NIOCore

/// What the decoder remembers about one chunk stream id between chunks
/// (RTMP specification, section 5.3.1.2: types 1 to 3 inherit fields from the previous chunk).
struct ChunkStreamState: Sendable {
    /// The chunk stream id this state belongs to.
    let chunkStreamID: UInt32
    /// The absolute timestamp of the current (or last) message.
    var timestamp: UInt32 = 0
    /// The delta a type 3 chunk that starts a new message adds. After a type 0 header this is the
    /// type 0 timestamp itself (specification 5.3.1.2.4; ffmpeg's writer relies on it).
    var timestampDelta: UInt32 = 0
    /// The body length of the current (or last) message.
    var messageLength = 0
    /// The type id of the current (or last) message.
    var typeID: UInt8 = 0
    /// The message stream id of the current (or last) message.
    var messageStreamID: UInt32 = 0
    /// The extended timestamp field of the latest type 0, 1 or 2 header (or type 3 header that
    /// started a message), or nil when that header's 24-bit field was below 0xFFFFFF.
    var extendedTimestamp: UInt32?
    /// True while the chunk stream has carried no type 0 header (it started with type 1, as
    /// librtmp does): its message stream id is inferred from each message's type.
    var inferStreamID = false
    /// True between the first chunk of a message and its last.
    var inProgress = false
    /// Body bytes received so far for the current message.
    var received = 0
    /// Body bytes still expected in the current chunk.
    var chunkRemaining = 0
    /// The body assembled so far (nil until the first piece arrives).
    var payload: ByteBuffer?
    /// Bytes of storage charged to the budgets for `payload`.
    var charged = 0
    /// `received` at the last progress check (-1: the message began after it).
    var progressMark = -1
    /// Progress checks in a row at which this message had received nothing new.
    var stalledChecks = 0

    init(chunkStreamID: UInt32) {
        self.chunkStreamID = chunkStreamID
    }
}
