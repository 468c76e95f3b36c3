import Media
import NIOCore
import Testing

struct FLVTagEncoderTests {
    @Test(arguments: [
        ("AAC sequence header at 0", MediaKind.audio, Int64(0), "af001210", "08 000004 000000 00 000000 af001210 0000000f"),
        ("keyframe at 1 s", .video, 1000, "1701000000", "09 000005 0003e8 00 000000 1701000000 00000010"),
        ("script at 2^24 ms uses the extension byte", .script, 0x100_0000, "02", "12 000001 000000 01 000000 02 0000000c"),
        ("timestamp past 2^32 wraps", .audio, 0x1_0000_0005, "af01", "08 000002 000005 00 000000 af01 0000000d"),
        ("negative timestamp is truncated", .audio, -1, "af01", "08 000002 ffffff ff 000000 af01 0000000d"),
    ])
    func encodesOneContiguousTag(name: String, kind: MediaKind, timestamp: Int64, payload: String, tag: String) {
        let frame = MediaFrame(kind: kind, timestamp: timestamp, payload: ByteBuffer(hex: payload))
        var buffer = ByteBuffer()
        FLVTagEncoder.encode(frame, into: &buffer)
        #expect(buffer.hexString == ByteBuffer(hex: tag).hexString)
        #expect(FLVTagEncoder.encode(frame, allocator: ByteBufferAllocator()) == buffer)
    }

    @Test func appendsAfterExistingBytes() {
        var buffer = FLVFileHeader.httpFLVPreamble(hasAudio: true, hasVideo: false, allocator: ByteBufferAllocator())
        FLVTagEncoder.encode(MediaFrame(kind: .audio, timestamp: 0, payload: ByteBuffer(hex: "af01")), into: &buffer)
        #expect(buffer.readableBytes == 13 + 11 + 2 + 4)
    }

    @Test func allocatesTheTagAtItsFinalSize() {
        let payload = ByteBuffer(repeating: 0x42, count: 100_000)
        let tag = FLVTagEncoder.encode(MediaFrame(kind: .video, timestamp: 0, payload: payload), allocator: ByteBufferAllocator())
        #expect(tag.readableBytes == 100_000 + FLVTagEncoder.overhead)
        // Allocated once at the tag's size: a buffer that had to grow would be larger
        // than a fresh allocation of that size.
        #expect(tag.capacity == ByteBufferAllocator().buffer(capacity: 100_000 + FLVTagEncoder.overhead).capacity)
        #expect(tag.getSlice(at: 11, length: 100_000) == payload)
    }

    @Test func payloadBeyondTheDataSizeFieldIsNotFramed() {
        let payload = ByteBuffer(repeating: 0, count: FLVTagHeader.maxDataSize + 1)
        let frame = MediaFrame(kind: .video, timestamp: 0, payload: payload)
        var buffer = ByteBuffer()
        FLVTagEncoder.encode(frame, into: &buffer)
        #expect(buffer.readableBytes == 0)
        #expect(FLVTagEncoder.encode(frame, allocator: ByteBufferAllocator()).readableBytes == 0)
    }
}
