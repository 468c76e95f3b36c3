import Media
import NIOCore
import Testing

struct FLVTagReaderTests {
    private func readAll(_ input: ByteBuffer, chunkSize: Int, reader: FLVTagReader = FLVTagReader()) throws -> [FLVTag] {
        var reader = reader
        var pending = ByteBuffer()
        var tags: [FLVTag] = []
        var input = input
        while let chunk = input.readSlice(length: min(chunkSize, input.readableBytes)), chunk.readableBytes > 0 {
            pending.writeImmutableBuffer(chunk)
            while let tag = try reader.nextTag(from: &pending) {
                tags.append(tag)
            }
        }
        #expect(pending.readableBytes == 0)
        return tags
    }

    @Test(arguments: [1, 7, 4096, Int.max])
    func readsAnFFmpegFileInAnyChunking(chunkSize: Int) throws {
        let tags = try readAll(ByteBuffer(hex: Vectors.tinyFLVFile), chunkSize: chunkSize)
        #expect(tags.map(\.header.tagType) == [.script, .video, .audio, .audio, .video, .audio, .video, .audio, .video, .audio, .video])
        #expect(tags.map(\.header.timestamp) == [0, 0, 0, 0, 128, 128, 228, 256, 328, 384, 328])
        let frames = try tags.map { try $0.mediaFrame() }
        #expect(frames.map(\.isSequenceHeader) == [false, true, true, false, false, false, false, false, false, false, false])
        #expect(frames.map(\.isKeyframe) == [false, true, false, false, true, false, false, false, true, false, true])
    }

    @Test func reencodingAnFFmpegFileIsByteExact() throws {
        let original = ByteBuffer(hex: Vectors.tinyFLVFile)
        var reader = FLVTagReader()
        var input = original
        var output = FLVFileHeader.httpFLVPreamble(hasAudio: true, hasVideo: true, allocator: ByteBufferAllocator())
        while let tag = try reader.nextTag(from: &input) {
            FLVTagEncoder.encode(try tag.mediaFrame(), into: &output)
        }
        #expect(reader.fileHeader == FLVFileHeader(hasAudio: true, hasVideo: true))
        #expect(input.readableBytes == 0)
        #expect(output == original)
    }

    @Test func readsBareTagsFromTheEncoder() throws {
        let frames = [
            MediaFrame(kind: .audio, timestamp: 0, payload: ByteBuffer(hex: "af001210")),
            MediaFrame(kind: .video, timestamp: 0x1234_5678, payload: ByteBuffer(hex: "2701000021aabbcc")),
        ]
        var bytes = ByteBuffer()
        for frame in frames { FLVTagEncoder.encode(frame, into: &bytes) }
        let tags = try readAll(bytes, chunkSize: 3, reader: FLVTagReader(expectsFileHeader: false))
        #expect(tags.map(\.body) == frames.map(\.payload))
        #expect(tags.map(\.header.timestamp) == [0, 0x1234_5678])
    }

    @Test func skipsHeaderBytesBeyondNine() throws {
        var input = ByteBuffer(hex: "464c5601040000000c aabbcc 00000000 08 000002 000000 00 000000 af01 0000000d")
        var reader = FLVTagReader()
        let tag = try #require(try reader.nextTag(from: &input))
        #expect(tag.body == ByteBuffer(hex: "af01"))
    }

    @Test func waitsForCompleteTagsWithoutConsuming() throws {
        var reader = FLVTagReader(expectsFileHeader: false)
        var input = ByteBuffer(hex: "08 000002 000000 00 000000 af01 0000")
        #expect(try reader.nextTag(from: &input) == nil)
        #expect(input.readableBytes == 15)
        input.writeBytes([0x00, 0x0D])
        #expect(try reader.nextTag(from: &input)?.body == ByteBuffer(hex: "af01"))
    }

    @Test func rejectsOversizedTagsFromTheHeaderAlone() {
        var reader = FLVTagReader(maxTagSize: 1000, expectsFileHeader: false)
        var input = ByteBuffer(hex: "09 0003e9 000000 00 000000")
        #expect(throws: FLVError.tagTooLarge(size: 1001, limit: 1000)) {
            try reader.nextTag(from: &input)
        }
    }

    @Test(arguments: [
        ("wrong PreviousTagSize", "08 000002 000000 00 000000 af01 0000000c", FLVError.previousTagSizeMismatch(expected: 13, actual: 12)),
        ("unknown tag type", "0a 000002 000000 00 000000 af01 0000000d", .unsupportedTagType(10)),
    ])
    func rejectsMalformedTags(name: String, hex: String, error: FLVError) {
        var reader = FLVTagReader(expectsFileHeader: false)
        var input = ByteBuffer(hex: hex)
        #expect(throws: error) {
            try reader.nextTag(from: &input)
        }
    }

    @Test func rejectsNonZeroPreviousTagSizeZero() {
        var reader = FLVTagReader()
        var input = ByteBuffer(hex: "464c560105 00000009 00000001")
        #expect(throws: FLVError.previousTagSizeMismatch(expected: 0, actual: 1)) {
            try reader.nextTag(from: &input)
        }
    }

    @Test func garbageNeverTraps() {
        var state: UInt64 = 42
        for length in 0..<300 {
            var bytes: [UInt8] = []
            for _ in 0..<length {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                bytes.append(UInt8(truncatingIfNeeded: state >> 33))
            }
            // Bias towards valid tag types so the parser gets past the first byte.
            if !bytes.isEmpty { bytes[0] = [8, 9, 18][length % 3] }
            var reader = FLVTagReader(maxTagSize: 64, expectsFileHeader: false)
            var input = ByteBuffer(bytes: bytes)
            while let tag = try? reader.nextTag(from: &input) {
                _ = try? tag.mediaFrame()
            }
        }
    }
}
