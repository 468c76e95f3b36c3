import NIOCore

/// The 11-byte FLV tag header (FLV spec v10.1 E.4.1): tag type, 24-bit DataSize, 24-bit
/// timestamp plus an 8-bit extension holding the upper bits, and a 24-bit StreamID (always 0).
public struct FLVTagHeader: Sendable, Equatable {
    public static let encodedLength = 11
    /// The largest body a 24-bit DataSize can describe.
    public static let maxDataSize = 0xFF_FFFF

    public var tagType: MediaKind
    /// Body length in bytes, at most `maxDataSize`.
    public var dataSize: UInt32
    /// Milliseconds; the low 24 bits go in Timestamp, the high 8 in TimestampExtended.
    public var timestamp: UInt32
    /// Always 0 in files and HTTP-FLV; kept so decode/encode round-trips.
    public var streamID: UInt32

    public init(tagType: MediaKind, dataSize: UInt32, timestamp: UInt32, streamID: UInt32 = 0) {
        self.tagType = tagType
        self.dataSize = dataSize
        self.timestamp = timestamp
        self.streamID = streamID
    }

    /// Reads 11 bytes. On error nothing is consumed.
    public init(from buffer: inout ByteBuffer) throws(FLVError) {
        var copy = buffer
        guard copy.readableBytes >= Self.encodedLength,
              let typeByte = copy.readInteger(as: UInt8.self),
              let dataSize = copy.readUInt24(),
              let timestampLow = copy.readUInt24(),
              let timestampExtended = copy.readInteger(as: UInt8.self),
              let streamID = copy.readUInt24()
        else {
            throw .truncated(needed: Self.encodedLength, available: buffer.readableBytes)
        }
        // The top two bits are reserved (0) and bit 5 is the Filter (encryption) flag,
        // which this server does not support: a set bit makes the type unknown here.
        guard let tagType = MediaKind(rawValue: typeByte) else {
            throw .unsupportedTagType(typeByte)
        }
        self.init(tagType: tagType, dataSize: dataSize, timestamp: UInt32(timestampExtended) << 24 | timestampLow, streamID: streamID)
        buffer = copy
    }

    /// Writes the 11 header bytes. `dataSize` and `streamID` are written modulo 2^24.
    public func encode(into buffer: inout ByteBuffer) {
        buffer.writeInteger(tagType.rawValue)
        buffer.writeUInt24(dataSize)
        buffer.writeUInt24(timestamp)
        buffer.writeInteger(UInt8(truncatingIfNeeded: timestamp >> 24))
        buffer.writeUInt24(streamID)
    }
}

extension ByteBuffer {
    // File-private: other Media files may define their own 24-bit helpers.
    /// Reads a big-endian 24-bit unsigned integer, or nil if fewer than 3 bytes remain.
    fileprivate mutating func readUInt24() -> UInt32? {
        guard let high = readInteger(as: UInt8.self), let low = readInteger(as: UInt16.self) else {
            return nil
        }
        return UInt32(high) << 16 | UInt32(low)
    }

    /// Writes the low 24 bits of `value`, big-endian.
    fileprivate mutating func writeUInt24(_ value: UInt32) {
        writeInteger(UInt8(truncatingIfNeeded: value >> 16))
        writeInteger(UInt16(truncatingIfNeeded: value))
    }
}
