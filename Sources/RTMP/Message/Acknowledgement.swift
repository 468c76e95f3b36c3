import NIOCore

/// Acknowledgement (type 3, RTMP specification 5.4.3): the total bytes received so far, sent
/// each time a window's worth has arrived.
public struct Acknowledgement: Sendable, Equatable {
    /// Bytes received on the connection so far (wraps modulo 2^32).
    public var sequenceNumber: UInt32

    /// Creates the message.
    public init(sequenceNumber: UInt32) {
        self.sequenceNumber = sequenceNumber
    }

    /// Decodes the body.
    public init(from payload: ByteBuffer) throws(MessageError) {
        guard let value = payload.getInteger(at: payload.readerIndex, as: UInt32.self) else {
            throw .truncated(.acknowledgement, length: payload.readableBytes)
        }
        self.sequenceNumber = value
    }

    /// Appends the 4-byte body.
    public func encode(into buffer: inout ByteBuffer) {
        buffer.writeInteger(self.sequenceNumber)
    }

    /// The raw message on the protocol control chunk stream (2) and message stream 0.
    public func message(chunkStreamID: UInt32 = 2, timestamp: UInt32 = 0) -> RTMPMessage {
        var payload = ByteBuffer()
        self.encode(into: &payload)
        return RTMPMessage(type: .acknowledgement, streamID: 0, timestamp: timestamp, chunkStreamID: chunkStreamID, payload: payload)
    }
}
