import NIOCore

/// Window Acknowledgement Size (type 5, RTMP specification 5.4.4): how many bytes the receiver
/// may take before it must send an ``Acknowledgement``.
public struct WindowAcknowledgementSize: Sendable, Equatable {
    /// The window in bytes (nginx-rtmp and SRS announce 5000000 / 2500000).
    public var windowSize: UInt32

    /// Creates the message.
    public init(windowSize: UInt32) {
        self.windowSize = windowSize
    }

    /// Decodes the body.
    public init(from payload: ByteBuffer) throws(MessageError) {
        guard let value = payload.getInteger(at: payload.readerIndex, as: UInt32.self) else {
            throw .truncated(.windowAcknowledgementSize, length: payload.readableBytes)
        }
        self.windowSize = value
    }

    /// Appends the 4-byte body.
    public func encode(into buffer: inout ByteBuffer) {
        buffer.writeInteger(self.windowSize)
    }

    /// The raw message on the protocol control chunk stream (2) and message stream 0.
    public func message(chunkStreamID: UInt32 = 2, timestamp: UInt32 = 0) -> RTMPMessage {
        var payload = ByteBuffer()
        self.encode(into: &payload)
        return RTMPMessage(
            type: .windowAcknowledgementSize, streamID: 0, timestamp: timestamp, chunkStreamID: chunkStreamID, payload: payload
        )
    }
}
