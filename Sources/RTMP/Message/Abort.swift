import NIOCore

/// Abort Message (type 2, RTMP specification 5.4.2): discard the partly received message on a chunk stream.
public struct Abort: Sendable, Equatable {
    /// The chunk stream whose incomplete message is discarded.
    public var chunkStreamID: UInt32

    /// Creates the message.
    public init(chunkStreamID: UInt32) {
        self.chunkStreamID = chunkStreamID
    }

    /// Decodes the body.
    public init(from payload: ByteBuffer) throws(MessageError) {
        guard let value = payload.getInteger(at: payload.readerIndex, as: UInt32.self) else {
            throw .truncated(.abort, length: payload.readableBytes)
        }
        self.chunkStreamID = value
    }

    /// Appends the 4-byte body.
    public func encode(into buffer: inout ByteBuffer) {
        buffer.writeInteger(self.chunkStreamID)
    }

    /// The raw message on the protocol control chunk stream (2) and message stream 0.
    public func message(chunkStreamID: UInt32 = 2, timestamp: UInt32 = 0) -> RTMPMessage {
        var payload = ByteBuffer()
        self.encode(into: &payload)
        return RTMPMessage(type: .abort, streamID: 0, timestamp: timestamp, chunkStreamID: chunkStreamID, payload: payload)
    }
}
