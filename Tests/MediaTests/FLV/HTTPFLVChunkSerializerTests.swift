import Media
import NIOCore
import Testing

/// HTTP-FLV's shared unit (`HTTPFLVChunkSerializer`): an FLV tag framed as one HTTP/1.1
/// chunk, `<hex size>\r\n<tag>\r\n`, which a chunked decoder turns back into the tag.
struct HTTPFLVChunkSerializerTests {
    @Test(arguments: [2, 1, 16 - FLVTagEncoder.overhead, 100_000])
    func frameIsTheTagInOneChunk(payloadBytes: Int) throws {
        let frame = MediaFrame(kind: .audio, timestamp: 1000, payload: ByteBuffer(repeating: 0xAF, count: payloadBytes))
        var chunk = HTTPFLVChunkSerializer().serialize(frame, allocator: ByteBufferAllocator())
        let tag = FLVTagEncoder.encode(frame, allocator: ByteBufferAllocator())
        let digits = try #require(chunk.readableBytesView.firstIndex(of: UInt8(ascii: "\r"))) - chunk.readerIndex
        #expect(chunk.readString(length: digits) == String(tag.readableBytes, radix: 16))
        #expect(chunk.readString(length: 2) == "\r\n")
        #expect(chunk.readSlice(length: tag.readableBytes) == tag)
        #expect(chunk.readString(length: 2) == "\r\n")
        #expect(chunk.readableBytes == 0)
    }

    @Test func theFramingFitsItsBound() {
        // The largest tag FLV can frame: 16 MiB - 1 of data plus the overhead, seven hex digits.
        let frame = MediaFrame(kind: .video, timestamp: 0, payload: ByteBuffer(repeating: 0, count: FLVTagHeader.maxDataSize))
        let chunk = HTTPFLVChunkSerializer().serialize(frame, allocator: ByteBufferAllocator())
        #expect(chunk.readableBytes - (FLVTagHeader.maxDataSize + FLVTagEncoder.overhead) <= HTTPChunk.maxFramingBytes)
        #expect(chunk.getString(at: 0, length: 9) == String(FLVTagHeader.maxDataSize + FLVTagEncoder.overhead, radix: 16) + "\r\n")
    }

    @Test func unframeablePayloadsAndEmptyBodiesAreNoChunkAtAll() {
        let frame = MediaFrame(kind: .video, timestamp: 0, payload: ByteBuffer(repeating: 0, count: FLVTagHeader.maxDataSize + 1))
        #expect(HTTPFLVChunkSerializer().serialize(frame, allocator: ByteBufferAllocator()).readableBytes == 0)
        #expect(HTTPChunk.framed(ByteBuffer(), allocator: ByteBufferAllocator()).readableBytes == 0)
        let preamble = FLVFileHeader.httpFLVPreamble(hasAudio: true, hasVideo: true, allocator: ByteBufferAllocator())
        #expect(HTTPChunk.framed(preamble, allocator: ByteBufferAllocator()).getString(at: 0, length: 3) == "d\r\n")
    }
}
