import Media
import NIOCore
import Testing

struct HEVCDecoderConfigurationRecordTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var record: String
        var codecString: String
        var profileIdc: UInt8
        var levelIdc: UInt8
        var chromaFormatIdc: UInt8
        var bitDepth: Int
        var codedSize: (width: Int, height: Int)
        var size: (width: Int, height: Int)
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "x265 main 1080p", record: Vectors.hevcMain1080Record, codecString: "hvc1.1.6.L120.90",
             profileIdc: 1, levelIdc: 120, chromaFormatIdc: 1, bitDepth: 8, codedSize: (1920, 1080), size: (1920, 1080)),
        Case(name: "x265 main 720p", record: Vectors.hevcMain720Record, codecString: "hvc1.1.6.L93.90",
             profileIdc: 1, levelIdc: 93, chromaFormatIdc: 1, bitDepth: 8, codedSize: (1280, 720), size: (1280, 720)),
        Case(name: "x265 main 10", record: Vectors.hevcMain10Record, codecString: "hvc1.2.4.L63.90",
             profileIdc: 2, levelIdc: 63, chromaFormatIdc: 1, bitDepth: 10, codedSize: (640, 360), size: (640, 360)),
        Case(name: "x265 range extensions 4:2:2", record: Vectors.hevcRext422Record, codecString: "hvc1.4.10.L63.9D.8",
             profileIdc: 4, levelIdc: 63, chromaFormatIdc: 2, bitDepth: 8, codedSize: (640, 360), size: (640, 360)),
        Case(name: "x265 636x356 conformance window", record: Vectors.hevcConformanceWindowRecord, codecString: "hvc1.1.6.L63.90",
             profileIdc: 1, levelIdc: 63, chromaFormatIdc: 1, bitDepth: 8, codedSize: (640, 360), size: (636, 356)),
    ]

    @Test(arguments: cases)
    func parsesRealEncoderRecords(_ testCase: Case) throws {
        let record = try HEVCDecoderConfigurationRecord(from: ByteBuffer(hex: testCase.record))
        #expect(record.configurationVersion == 1)
        #expect(record.codecString == testCase.codecString)
        #expect(record.generalProfileSpace == 0)
        #expect(!record.generalTierFlag)
        #expect(record.generalProfileIdc == testCase.profileIdc)
        #expect(record.generalLevelIdc == testCase.levelIdc)
        #expect(record.chromaFormatIdc == testCase.chromaFormatIdc)
        #expect(record.bitDepthLuma == testCase.bitDepth)
        #expect(record.bitDepthChroma == testCase.bitDepth)
        #expect(record.nalUnitLengthSize == 4)
        #expect(record.arrays.map(\.nalUnitType) == [32, 33, 34])
        #expect(record.videoParameterSets.count == 1)
        #expect(record.sequenceParameterSets.count == 1)
        #expect(record.pictureParameterSets.count == 1)

        let sps = record.sequenceParameterSet
        #expect(sps.generalProfileIdc == testCase.profileIdc)
        #expect(sps.generalLevelIdc == testCase.levelIdc)
        #expect(sps.chromaFormatIdc == testCase.chromaFormatIdc)
        #expect(sps.bitDepthLuma == testCase.bitDepth)
        #expect(sps.codedWidth == testCase.codedSize.width)
        #expect(sps.codedHeight == testCase.codedSize.height)
        #expect(sps.width == testCase.size.width)
        #expect(sps.height == testCase.size.height)
    }

    @Test func codecStringEncodesProfileSpaceTierAndTrimsConstraintBytes() throws {
        // The 1080p record with profile space 1 and the high tier (byte 1: 01 1 00001 = 0x61),
        // and constraint bytes B0 00 00 00 00 01 (the last one kept: only trailing zeros go).
        var bytes = Array(ByteBuffer(hex: Vectors.hevcMain1080Record).readableBytesView)
        bytes[1] = 0x61
        bytes[6...11] = [0xB0, 0, 0, 0, 0, 0x01]
        let record = try HEVCDecoderConfigurationRecord(from: ByteBuffer(bytes: bytes))
        #expect(record.codecString == "hvc1.A1.6.H120.B0.0.0.0.0.1")
    }

    @Test(arguments: [
        ("empty", "", CodecConfigError.truncated(needed: 23, available: 0)),
        ("version 2", "02016000000090000000000078f000fcfdf8f800000f00", .unsupportedConfigurationVersion(2)),
        ("3-byte NAL lengths", "01016000000090000000000078f000fcfdf8f800000e00", .invalidNALUnitLengthSize(3)),
        ("no arrays", "01016000000090000000000078f000fcfdf8f800000f00", .missingSequenceParameterSet),
        ("array header cut", "01016000000090000000000078f000fcfdf8f800000f01a100", .truncated(needed: 3, available: 2)),
        ("NAL length beyond the data", "01016000000090000000000078f000fcfdf8f800000f01a1000100104201", .truncated(needed: 16, available: 2)),
        ("NAL length over the cap", "01016000000090000000000078f000fcfdf8f800000f01a100014001", .parameterSetTooLarge(length: 16385, limit: 16384)),
        ("too many NAL units", "01016000000090000000000078f000fcfdf8f800000f01a10041", .tooManyParameterSets(count: 65, limit: 64)),
        ("VPS in the SPS array", "01016000000090000000000078f000fcfdf8f800000f01a10001000240 01", .unexpectedNALUnitType(expected: 33, actual: 32)),
        ("one-byte NAL unit", "01016000000090000000000078f000fcfdf8f800000f01a1000100 0142", .valueOutOfRange(field: "nalUnitLength", value: 1)),
        ("SPS cut after the header", "01016000000090000000000078f000fcfdf8f800000f01a10001000342 0101", .bitstreamExhausted(bitOffset: 8, requested: 2)),
    ])
    func rejectsMalformedRecords(name: String, hex: String, error: CodecConfigError) {
        #expect(throws: error) {
            try HEVCDecoderConfigurationRecord(from: ByteBuffer(hex: hex))
        }
    }

    @Test func everyTruncationOfARealRecordThrowsATypedError() {
        let record = ByteBuffer(hex: Vectors.hevcMain1080Record)
        for length in 0..<record.readableBytes {
            let prefix = record.getSlice(at: record.readerIndex, length: length) ?? ByteBuffer()
            #expect(throws: CodecConfigError.self) {
                try HEVCDecoderConfigurationRecord(from: prefix)
            }
        }
    }
}
