import NIOCore

/// The 9-byte FLV file header (FLV spec v10.1 E.2): "FLV", version 1, the audio/video
/// presence flags and the offset of the body.
public struct FLVFileHeader: Sendable, Equatable {
    /// The header length, and the `DataOffset` this encoder writes.
    public static let encodedLength = 9
    /// A header larger than this is not an FLV file; the field exists for future versions
    /// that never came. The cap bounds what a reader skips.
    public static let maxDataOffset: UInt32 = 1024

    public var version: UInt8
    public var hasAudio: Bool
    public var hasVideo: Bool
    /// Where the body (PreviousTagSize0) starts, from the start of the file.
    public var dataOffset: UInt32

    public init(hasAudio: Bool, hasVideo: Bool, version: UInt8 = 1, dataOffset: UInt32 = 9) {
        self.version = version
        self.hasAudio = hasAudio
        self.hasVideo = hasVideo
        self.dataOffset = dataOffset
    }

    /// Reads the 9 header bytes from `buffer`, leaving bytes beyond them (up to
    /// `dataOffset`, then PreviousTagSize0) unread. On error nothing is consumed.
    public init(from buffer: inout ByteBuffer) throws(FLVError) {
        var copy = buffer
        guard copy.readableBytes >= Self.encodedLength,
              let signatureHigh = copy.readInteger(as: UInt16.self),
              let signatureLow = copy.readInteger(as: UInt8.self),
              let version = copy.readInteger(as: UInt8.self),
              let flags = copy.readInteger(as: UInt8.self),
              let dataOffset = copy.readInteger(as: UInt32.self)
        else {
            throw .truncated(needed: Self.encodedLength, available: buffer.readableBytes)
        }
        let signature = UInt32(signatureHigh) << 8 | UInt32(signatureLow)
        guard signature == 0x464C56 else {  // "FLV"
            throw .invalidSignature(signature)
        }
        guard version == 1 else {
            throw .unsupportedVersion(version)
        }
        guard dataOffset >= UInt32(Self.encodedLength), dataOffset <= Self.maxDataOffset else {
            throw .invalidDataOffset(dataOffset)
        }
        self.init(hasAudio: flags & 0x04 != 0, hasVideo: flags & 0x01 != 0, version: version, dataOffset: dataOffset)
        buffer = copy
    }

    /// Writes the 9 header bytes.
    public func encode(into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt16(0x464C))  // "FL"
        buffer.writeInteger(UInt8(0x56))  // "V"
        buffer.writeInteger(version)
        buffer.writeInteger(UInt8((hasAudio ? 0x04 : 0) | (hasVideo ? 0x01 : 0)))
        buffer.writeInteger(dataOffset)
    }

    /// The 13 bytes that start an HTTP-FLV response: this header followed by
    /// PreviousTagSize0 (always 0). Tags from `FLVTagEncoder` follow directly.
    public static func httpFLVPreamble(hasAudio: Bool, hasVideo: Bool, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: encodedLength + 4)
        FLVFileHeader(hasAudio: hasAudio, hasVideo: hasVideo).encode(into: &buffer)
        buffer.writeInteger(UInt32(0))  // PreviousTagSize0
        return buffer
    }
}
