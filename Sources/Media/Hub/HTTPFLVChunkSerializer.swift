import NIOCore

/// Serialises a frame once into an FLV tag framed as one HTTP/1.1 chunk: `<size in hex>\r\n`,
/// the tag (header, body, PreviousTagSize), `\r\n`.
///
/// An HTTP-FLV response is chunked, and framing each viewer's body parts would cost every
/// viewer three writes and a small allocation per tag (what an HTTP encoder does). Framed
/// here, once per stream, the chunk is as shareable as an RTMP chunk run: every HTTP-FLV
/// viewer writes the same buffer to its socket, and an HTTP-FLV viewer costs what an RTMP
/// viewer does.
public struct HTTPFLVChunkSerializer: FrameSerializer {
    public init() {}

    public var format: OutputFormat { .httpFLVChunk }

    public func serialize(_ frame: MediaFrame, allocator: ByteBufferAllocator) -> ByteBuffer {
        let dataSize = frame.payload.readableBytes
        // Unframeable as FLV (see `FLVTagEncoder`): nothing, as the tag serializer writes.
        guard dataSize <= FLVTagHeader.maxDataSize else { return allocator.buffer(capacity: 0) }
        let tagSize = dataSize + FLVTagEncoder.overhead
        var buffer = allocator.buffer(capacity: tagSize + HTTPChunk.maxFramingBytes)
        HTTPChunk.writeHeader(size: tagSize, into: &buffer)
        FLVTagEncoder.encode(frame, into: &buffer)
        buffer.writeStaticString("\r\n")
        return buffer
    }
}

/// HTTP/1.1 chunked transfer coding (RFC 9112 §7.1), for bodies a connection writes as they
/// are, already framed.
public enum HTTPChunk {
    /// The most bytes framing adds to the largest FLV tag (16 MiB − 1 of data and 15 of
    /// header and PreviousTagSize, 0x100000e): seven hex digits and two CRLFs.
    public static let maxFramingBytes = 11

    /// The last chunk and the end of the body (no trailers).
    public static let end: StaticString = "0\r\n\r\n"

    /// `body` as one chunk, in a new buffer; an empty body is no chunk at all (a zero-size
    /// chunk would end the response).
    public static func framed(_ body: ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer {
        guard body.readableBytes > 0 else { return allocator.buffer(capacity: 0) }
        var buffer = allocator.buffer(capacity: body.readableBytes + maxFramingBytes + 6)
        writeHeader(size: body.readableBytes, into: &buffer)
        buffer.writeImmutableBuffer(body)
        buffer.writeStaticString("\r\n")
        return buffer
    }

    /// Writes `<size in lower-case hex>\r\n`.
    static func writeHeader(size: Int, into buffer: inout ByteBuffer) {
        let digits: StaticString = "0123456789abcdef"
        var shift = max(0, (Int.bitWidth - size.leadingZeroBitCount - 1) / 4 * 4)
        while shift >= 0 {
            let nibble = (size >> shift) & 0xF
            buffer.writeInteger(digits.utf8Start[nibble])
            shift -= 4
        }
        buffer.writeStaticString("\r\n")
    }
}
