import Media
import NIOCore
import Testing

struct FLVTagHeaderTests {
    @Test(arguments: [
        ("video at 0", FLVTagHeader(tagType: .video, dataSize: 44, timestamp: 0), "09 00002c 000000 00 000000"),
        ("audio at 128", FLVTagHeader(tagType: .audio, dataSize: 7, timestamp: 128), "08 000007 000080 00 000000"),
        ("script", FLVTagHeader(tagType: .script, dataSize: 268, timestamp: 0), "12 00010c 000000 00 000000"),
        ("timestamp needing the extension byte", FLVTagHeader(tagType: .video, dataSize: 1, timestamp: 0x0102_0304), "09 000001 020304 01 000000"),
        ("largest timestamp and size", FLVTagHeader(tagType: .audio, dataSize: 0xFF_FFFF, timestamp: 0xFFFF_FFFF), "08 ffffff ffffff ff 000000"),
        ("non-zero stream id round-trips", FLVTagHeader(tagType: .audio, dataSize: 2, timestamp: 5, streamID: 1), "08 000002 000005 00 000001"),
    ])
    func encodesAndDecodes(name: String, header: FLVTagHeader, hex: String) throws {
        var encoded = ByteBuffer()
        header.encode(into: &encoded)
        #expect(encoded.hexString == ByteBuffer(hex: hex).hexString)

        var input = ByteBuffer(hex: hex)
        #expect(try FLVTagHeader(from: &input) == header)
        #expect(input.readableBytes == 0)
    }

    @Test(arguments: [
        ("empty", "", FLVError.truncated(needed: 11, available: 0)),
        ("ten bytes", "09 00002c 000000 00 0000", .truncated(needed: 11, available: 10)),
        ("tag type 7", "07 00002c 000000 00 000000", .unsupportedTagType(7)),
        ("encrypted audio (Filter bit)", "28 00002c 000000 00 000000", .unsupportedTagType(0x28)),
        ("reserved bits set", "c9 00002c 000000 00 000000", .unsupportedTagType(0xC9)),
    ])
    func rejectsMalformedHeaders(name: String, hex: String, error: FLVError) {
        var input = ByteBuffer(hex: hex)
        #expect(throws: error) {
            try FLVTagHeader(from: &input)
        }
    }
}
