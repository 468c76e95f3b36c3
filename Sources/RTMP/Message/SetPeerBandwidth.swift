import NIOCore

/// Set Peer Bandwidth (type 6, RTMP specification 5.4.5): limits the peer's output bandwidth
/// by setting its acknowledgement window.
public struct SetPeerBandwidth: Sendable, Equatable {
    /// How the peer should apply the new window (specification 5.4.5).
    public enum LimitType: UInt8, Sendable, Equatable {
        /// Use the new window as is.
        case hard = 0
        /// Use the smaller of the new and current windows.
        case soft = 1
        /// Hard if the previous limit was hard, otherwise ignore.
        case dynamic = 2
    }

    /// The window size in bytes.
    public var windowSize: UInt32
    /// The limit type.
    public var limitType: LimitType

    /// Creates the message.
    public init(windowSize: UInt32, limitType: LimitType) {
        self.windowSize = windowSize
        self.limitType = limitType
    }

    /// Decodes the 5-byte body.
    public init(from payload: ByteBuffer) throws(MessageError) {
        guard
            let window = payload.getInteger(at: payload.readerIndex, as: UInt32.self),
            let rawLimit = payload.getInteger(at: payload.readerIndex + 4, as: UInt8.self)
        else { throw .truncated(.setPeerBandwidth, length: payload.readableBytes) }
        guard let limitType = LimitType(rawValue: rawLimit) else { throw .invalidLimitType(rawLimit) }
        self.windowSize = window
        self.limitType = limitType
    }

    /// Appends the 5-byte body.
    public func encode(into buffer: inout ByteBuffer) {
        buffer.writeInteger(self.windowSize)
        buffer.writeInteger(self.limitType.rawValue)
    }

    /// The raw message on the protocol control chunk stream (2) and message stream 0.
    public func message(chunkStreamID: UInt32 = 2, timestamp: UInt32 = 0) -> RTMPMessage {
        var payload = ByteBuffer()
        self.encode(into: &payload)
        return RTMPMessage(type: .setPeerBandwidth, streamID: 0, timestamp: timestamp, chunkStreamID: chunkStreamID, payload: payload)
    }
}
