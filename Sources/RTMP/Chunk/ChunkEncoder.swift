import NIOCore

/// Splits messages into chunks (RTMP specification, section 5.3).
///
/// Every message gets a type 0 header, then its payload in ``chunkSize`` pieces separated by
/// 1-byte type 3 headers. When the timestamp needs the extended field (>= 0xFFFFFF) the 4-byte
/// field is repeated after every type 3 header, as the specification, Flash Media Server,
/// librtmp and ffmpeg expect (ffmpeg and librtmp read it unconditionally).
///
/// Always using type 0 headers costs 11 bytes per message but keeps the encoder stateless, so
/// one encoded buffer can be written to many connections that share a chunk size.
public struct ChunkEncoder: Sendable {
    /// The outgoing chunk size in bytes; starts at the protocol default of 128. Set it only after
    /// sending Set Chunk Size to the peer. Must be at least 1.
    public var chunkSize: Int

    /// Creates an encoder.
    public init(chunkSize: Int = ChunkDecoder.defaultChunkSize) {
        self.chunkSize = chunkSize
    }

    /// Appends the chunks of `message` to `buffer`. The payload is copied once, into `buffer`.
    ///
    /// - Precondition: `chunkStreamID` is in 2...65599, the payload is at most 0xFFFFFF bytes
    ///   (the 24-bit length field) and ``chunkSize`` is positive. These are programming errors,
    ///   never properties of peer input.
    public func encode(_ message: RTMPMessage, into buffer: inout ByteBuffer) {
        let chunkStreamID = message.chunkStreamID
        let length = message.payload.readableBytes
        precondition((2...65599).contains(chunkStreamID), "chunk stream id \(chunkStreamID) out of range")
        precondition(length <= 0xFFFFFF, "RTMP message of \(length) bytes exceeds the 24-bit length field")
        precondition(self.chunkSize > 0, "chunk size must be positive")

        let extended = message.timestamp >= 0xFFFFFF
        Self.writeBasicHeader(format: 0, chunkStreamID: chunkStreamID, into: &buffer)
        buffer.writeUInt24(extended ? 0xFFFFFF : message.timestamp)
        buffer.writeUInt24(UInt32(length))
        buffer.writeInteger(message.typeID)
        buffer.writeInteger(message.streamID, endianness: .little)
        if extended {
            buffer.writeInteger(message.timestamp)
        }

        let chunkSize = self.chunkSize
        message.payload.withUnsafeReadableBytes { bytes in
            var offset = 0
            while offset < length {
                if offset > 0 {
                    Self.writeBasicHeader(format: 3, chunkStreamID: chunkStreamID, into: &buffer)
                    if extended {
                        buffer.writeInteger(message.timestamp)
                    }
                }
                let count = min(chunkSize, length - offset)
                buffer.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)]))
                offset += count
            }
        }
    }

    /// Encodes `message` into a new buffer of exactly the right size.
    public func encode(_ message: RTMPMessage, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(
            capacity: Self.encodedSize(
                payloadLength: message.payload.readableBytes,
                chunkStreamID: message.chunkStreamID,
                timestamp: message.timestamp,
                chunkSize: self.chunkSize
            )
        )
        self.encode(message, into: &buffer)
        return buffer
    }

    /// The number of bytes ``encode(_:into:)`` writes for a message with these properties.
    public static func encodedSize(payloadLength: Int, chunkStreamID: UInt32, timestamp: UInt32, chunkSize: Int) -> Int {
        let basicHeader = Self.basicHeaderLength(chunkStreamID: chunkStreamID)
        let extendedField = timestamp >= 0xFFFFFF ? 4 : 0
        let chunkCount = payloadLength == 0 ? 1 : (payloadLength + max(chunkSize, 1) - 1) / max(chunkSize, 1)
        let firstHeader = basicHeader + 11 + extendedField
        let continuationHeaders = (chunkCount - 1) * (basicHeader + extendedField)
        return firstHeader + continuationHeaders + payloadLength
    }

    /// The length of the basic header for a chunk stream id: 1 byte for 2...63, 2 for 64...319, 3 above.
    public static func basicHeaderLength(chunkStreamID: UInt32) -> Int {
        switch chunkStreamID {
        case ..<64: return 1
        case ..<320: return 2
        default: return 3
        }
    }

    /// Writes a basic header (specification 5.3.1.1).
    static func writeBasicHeader(format: UInt8, chunkStreamID: UInt32, into buffer: inout ByteBuffer) {
        let formatBits = format << 6
        switch chunkStreamID {
        case ..<64:
            buffer.writeInteger(formatBits | UInt8(truncatingIfNeeded: chunkStreamID))
        case ..<320:
            buffer.writeInteger(formatBits)
            buffer.writeInteger(UInt8(truncatingIfNeeded: chunkStreamID - 64))
        default:
            let value = chunkStreamID - 64
            buffer.writeInteger(formatBits | 1)
            buffer.writeInteger(UInt8(truncatingIfNeeded: value))
            buffer.writeInteger(UInt8(truncatingIfNeeded: value >> 8))
        }
    }
}
