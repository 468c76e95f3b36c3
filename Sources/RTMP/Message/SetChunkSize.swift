import NIOCore

/// Set Chunk Size (type 1, RTMP specification 5.4.1): the chunk size the sender uses from now on.
public struct SetChunkSize: Sendable, Equatable {
    /// The new chunk size, 1...0x7FFFFFFF (the top bit is reserved).
    public var chunkSize: UInt32

    /// Creates the message.
    public init(chunkSize: UInt32) {
        self.chunkSize = chunkSize
    }

    /// Decodes the body. The value is not range-checked here; ``ChunkDecoder`` enforces its limits.
    public init(from payload: ByteBuffer) throws(MessageError) {
        guard let value = payload.getInteger(at: payload.readerIndex, as: UInt32.self) else {
            throw .truncated(.setChunkSize, length: payload.readableBytes)
        }
        self.chunkSize = value
    }

    /// Appends the 4-byte body.
    public func encode(into buffer: inout ByteBuffer) {
        buffer.writeInteger(self.chunkSize)
    }

    /// The raw message on the protocol control chunk stream (2) and message stream 0.
    public func message(chunkStreamID: UInt32 = 2, timestamp: UInt32 = 0) -> RTMPMessage {
        var payload = ByteBuffer()
        self.encode(into: &payload)
        return RTMPMessage(type: .setChunkSize, streamID: 0, timestamp: timestamp, chunkStreamID: chunkStreamID, payload: payload)
    }
}
