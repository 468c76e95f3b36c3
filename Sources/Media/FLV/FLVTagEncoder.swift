import NIOCore

/// Serialises a frame into one complete FLV tag: the 11-byte tag header, the payload, and
/// the 4-byte PreviousTagSize that follows every tag in a file or HTTP-FLV body.
///
/// A hub encodes each frame once and shares the bytes with every HTTP-FLV viewer, so the
/// payload is copied exactly once, into a buffer allocated at its final size.
public enum FLVTagEncoder {
    /// Header, body and PreviousTagSize: the bytes a tag adds to its payload.
    public static let overhead = FLVTagHeader.encodedLength + 4

    /// Appends the tag for `frame` to `buffer`.
    ///
    /// The timestamp is `UInt32(truncatingIfNeeded: frame.timestamp)`: FLV timestamps are
    /// 32-bit and wrap, as players expect. A payload longer than
    /// `FLVTagHeader.maxDataSize` (16 MiB - 1) cannot be framed and nothing is written;
    /// RTMP message lengths are 24-bit, so frames from an RTMP publisher never are.
    public static func encode(_ frame: MediaFrame, into buffer: inout ByteBuffer) {
        let dataSize = frame.payload.readableBytes
        guard dataSize <= FLVTagHeader.maxDataSize else { return }
        let header = FLVTagHeader(
            tagType: frame.kind,
            dataSize: UInt32(dataSize),
            timestamp: UInt32(truncatingIfNeeded: frame.timestamp)
        )
        buffer.reserveCapacity(minimumWritableBytes: dataSize + overhead)
        header.encode(into: &buffer)
        buffer.writeImmutableBuffer(frame.payload)
        buffer.writeInteger(UInt32(FLVTagHeader.encodedLength + dataSize))
    }

    /// The tag for `frame` in a new buffer of exactly the tag's size (empty if the payload
    /// is too large to frame; see `encode(_:into:)`).
    public static func encode(_ frame: MediaFrame, allocator: ByteBufferAllocator) -> ByteBuffer {
        let dataSize = frame.payload.readableBytes
        guard dataSize <= FLVTagHeader.maxDataSize else { return allocator.buffer(capacity: 0) }
        var buffer = allocator.buffer(capacity: dataSize + overhead)
        encode(frame, into: &buffer)
        return buffer
    }
}
