import NIOCore

/// A raw RTMP message as reassembled from chunks (RTMP specification, section 5.4 and 6.1).
///
/// Copying a message copies a reference to its payload: `ByteBuffer` is copy-on-write.
public struct RTMPMessage: Sendable, Equatable {
    /// The message type id (see ``MessageType``); kept as a raw byte so unknown types pass through.
    public var typeID: UInt8
    /// The message stream id (little-endian on the wire). 0 carries protocol control and connection commands.
    public var streamID: UInt32
    /// The absolute timestamp in milliseconds, after applying chunk-header deltas. Wraps modulo 2^32.
    public var timestamp: UInt32
    /// The chunk stream id the message arrived on, or is to be sent on (2...65599).
    public var chunkStreamID: UInt32
    /// The message body.
    public var payload: ByteBuffer

    /// Creates a message.
    public init(typeID: UInt8, streamID: UInt32, timestamp: UInt32, chunkStreamID: UInt32, payload: ByteBuffer) {
        self.typeID = typeID
        self.streamID = streamID
        self.timestamp = timestamp
        self.chunkStreamID = chunkStreamID
        self.payload = payload
    }

    /// Creates a message of a known type.
    public init(type: MessageType, streamID: UInt32, timestamp: UInt32, chunkStreamID: UInt32, payload: ByteBuffer) {
        self.init(
            typeID: type.rawValue,
            streamID: streamID,
            timestamp: timestamp,
            chunkStreamID: chunkStreamID,
            payload: payload
        )
    }

    /// The message type, or nil if the type id is not in the specification's table.
    public var type: MessageType? { MessageType(rawValue: self.typeID) }
}
