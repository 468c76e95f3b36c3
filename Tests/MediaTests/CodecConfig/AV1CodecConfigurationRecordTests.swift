import NIOCore
import Testing

@testable import Media

/// `AV1CodecConfigurationRecord`: what an Enhanced RTMP `av01` sequence start carries, read
/// for the HLS `CODECS` string and the picture size. Records were cut out of `.mp4` files
/// Debian's ffmpeg 5.1 wrote with libaom (`-usage realtime -cpu-used 8`).
struct AV1CodecConfigurationRecordTests {
    /// `testsrc2=size=640x360:rate=30`: Main, level 2.1 (seq_level_idx 1), 8 bits.
    static let main360 = "81010c000a0b0000000cc4ff6736be4010"
    /// `testsrc2=size=1920x1080:rate=30`: Main, level 4.0 (seq_level_idx 8), 8 bits.
    static let main1080 = "81080c000a0b00000042abbfc3776be401"

    @Test(arguments: [
        (main360, 640, 360, "av01.0.01M.08"),
        (main1080, 1920, 1080, "av01.0.08M.08"),
    ])
    func readsSizeAndCodecString(hex: String, width: Int, height: Int, codecString: String) throws {
        let record = try AV1CodecConfigurationRecord(from: ByteBuffer(hex: hex))
        #expect(record.width == width && record.height == height)
        #expect(record.codecString == codecString)
        #expect(record.profile == 0 && !record.highTier && record.bitDepth == 8 && !record.monochrome)
    }

    /// Hostile or broken records throw; none traps.
    @Test func malformedRecordsThrow() {
        let valid = Array(ByteBuffer(hex: Self.main360).readableBytesView)
        // Too short, a wrong marker/version, no config OBUs, an OBU size past the end.
        #expect(throws: CodecConfigError.self) { try AV1CodecConfigurationRecord(from: ByteBuffer(bytes: [0x81, 0x01])) }
        #expect(throws: CodecConfigError.self) { try AV1CodecConfigurationRecord(from: ByteBuffer(bytes: [0x01] + valid.dropFirst())) }
        #expect(throws: CodecConfigError.self) { try AV1CodecConfigurationRecord(from: ByteBuffer(bytes: Array(valid.prefix(4)))) }
        #expect(throws: CodecConfigError.self) { try AV1CodecConfigurationRecord(from: ByteBuffer(bytes: Array(valid.prefix(5)) + [0x7F])) }
        // A sequence header cut short, and a leb128 size that never ends.
        #expect(throws: CodecConfigError.self) { try AV1CodecConfigurationRecord(from: ByteBuffer(bytes: Array(valid.prefix(4)) + [0x0A, 0x02, 0x00, 0x00])) }
        #expect(throws: CodecConfigError.self) { try AV1CodecConfigurationRecord(from: ByteBuffer(bytes: Array(valid.prefix(4)) + [0x0A] + Array(repeating: 0xFF, count: 9))) }
        // Every truncation of a valid record throws or parses; none traps.
        for length in 0..<valid.count {
            _ = try? AV1CodecConfigurationRecord(from: ByteBuffer(bytes: Array(valid.prefix(length))))
        }
    }
}
