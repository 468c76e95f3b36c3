import Media
import NIOCore
import Testing

struct FLVFileHeaderTests {
    @Test(arguments: [
        ("audio and video", FLVFileHeader(hasAudio: true, hasVideo: true), "464c560105 00000009"),
        ("audio only", FLVFileHeader(hasAudio: true, hasVideo: false), "464c560104 00000009"),
        ("video only", FLVFileHeader(hasAudio: false, hasVideo: true), "464c560101 00000009"),
        ("neither", FLVFileHeader(hasAudio: false, hasVideo: false), "464c560100 00000009"),
    ])
    func encodesAndDecodes(name: String, header: FLVFileHeader, hex: String) throws {
        var encoded = ByteBuffer()
        header.encode(into: &encoded)
        #expect(encoded == ByteBuffer(hex: hex))

        var input = ByteBuffer(hex: hex)
        #expect(try FLVFileHeader(from: &input) == header)
        #expect(input.readableBytes == 0)
    }

    @Test func httpFLVPreambleIsHeaderPlusPreviousTagSizeZero() {
        let preamble = FLVFileHeader.httpFLVPreamble(hasAudio: true, hasVideo: true, allocator: ByteBufferAllocator())
        #expect(preamble == ByteBuffer(hex: "464c5601050000000900000000"))
        #expect(preamble.readableBytes == 13)
    }

    @Test func matchesFFmpegsHeader() throws {
        var file = ByteBuffer(hex: Vectors.tinyFLVFile)
        let header = try FLVFileHeader(from: &file)
        #expect(header == FLVFileHeader(hasAudio: true, hasVideo: true))
    }

    @Test func acceptsALargerDataOffset() throws {
        var input = ByteBuffer(hex: "464c5601050000000c")
        let header = try FLVFileHeader(from: &input)
        #expect(header.dataOffset == 12)
    }

    @Test(arguments: [
        ("empty", "", FLVError.truncated(needed: 9, available: 0)),
        ("eight bytes", "464c560105000000", .truncated(needed: 9, available: 8)),
        ("not FLV", "464c580105 00000009", .invalidSignature(0x464C58)),
        ("version 2", "464c560205 00000009", .unsupportedVersion(2)),
        ("data offset inside the header", "464c560105 00000008", .invalidDataOffset(8)),
        ("huge data offset", "464c560105 ffffffff", .invalidDataOffset(0xFFFF_FFFF)),
    ])
    func rejectsMalformedHeadersWithoutConsuming(name: String, hex: String, error: FLVError) {
        var input = ByteBuffer(hex: hex)
        #expect(throws: error) {
            try FLVFileHeader(from: &input)
        }
        #expect(input.readableBytes == hex.filter { !$0.isWhitespace }.count / 2)
    }
}
