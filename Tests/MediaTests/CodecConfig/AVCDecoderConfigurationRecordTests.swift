import Media
import NIOCore
import Testing

struct AVCDecoderConfigurationRecordTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var tagBody: String
        var codecString: String
        var profileIdc: UInt8
        var constraintFlags: UInt8
        var levelIdc: UInt8
        var chromaFormatIdc: UInt8
        var bitDepth: Int
        var width: Int
        var height: Int
        var frameRate: Double
        var sampleAspectRatio: AVCSequenceParameterSet.SampleAspectRatio
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "x264 high 720p30", tagBody: Vectors.avcHigh720TagBody, codecString: "avc1.64001f",
             profileIdc: 100, constraintFlags: 0x00, levelIdc: 31, chromaFormatIdc: 1, bitDepth: 8,
             width: 1280, height: 720, frameRate: 30, sampleAspectRatio: .init(width: 1, height: 1)),
        Case(name: "x264 constrained baseline 360p25", tagBody: Vectors.avcBaseline360TagBody, codecString: "avc1.42c01e",
             profileIdc: 66, constraintFlags: 0xC0, levelIdc: 30, chromaFormatIdc: 1, bitDepth: 8,
             width: 640, height: 360, frameRate: 25, sampleAspectRatio: .init(width: 1, height: 1)),
        Case(name: "x264 main 1080p30 cropped from 1088", tagBody: Vectors.avcMain1080TagBody, codecString: "avc1.4d4028",
             profileIdc: 77, constraintFlags: 0x40, levelIdc: 40, chromaFormatIdc: 1, bitDepth: 8,
             width: 1920, height: 1080, frameRate: 30, sampleAspectRatio: .init(width: 1, height: 1)),
        Case(name: "x264 high 4:2:2", tagBody: Vectors.avcHigh422TagBody, codecString: "avc1.7a001f",
             profileIdc: 122, constraintFlags: 0x00, levelIdc: 31, chromaFormatIdc: 2, bitDepth: 8,
             width: 1280, height: 720, frameRate: 30, sampleAspectRatio: .init(width: 1, height: 1)),
        Case(name: "x264 high 10", tagBody: Vectors.avcHigh10TagBody, codecString: "avc1.6e000d",
             profileIdc: 110, constraintFlags: 0x00, levelIdc: 13, chromaFormatIdc: 1, bitDepth: 10,
             width: 320, height: 240, frameRate: 30, sampleAspectRatio: .init(width: 1, height: 1)),
        Case(name: "x264 main 576p25 with SAR 16:15", tagBody: Vectors.avcSAR576TagBody, codecString: "avc1.4d401e",
             profileIdc: 77, constraintFlags: 0x40, levelIdc: 30, chromaFormatIdc: 1, bitDepth: 8,
             width: 720, height: 576, frameRate: 25, sampleAspectRatio: .init(width: 16, height: 15)),
    ]

    @Test(arguments: cases)
    func parsesRealEncoderRecords(_ testCase: Case) throws {
        let body = ByteBuffer(hex: testCase.tagBody)
        let header = try VideoTagHeader(from: body)
        #expect(header.codec == .avc)
        #expect(header.isSequenceHeader)
        let record = try AVCDecoderConfigurationRecord(from: body.dropping(header.headerLength))
        #expect(record.configurationVersion == 1)
        #expect(record.codecString == testCase.codecString)
        #expect(record.profileIndication == testCase.profileIdc)
        #expect(record.profileCompatibility == testCase.constraintFlags)
        #expect(record.levelIndication == testCase.levelIdc)
        #expect(record.nalUnitLengthSize == 4)
        #expect(record.sequenceParameterSets.count == 1)
        #expect(record.pictureParameterSets.count == 1)
        #expect(record.pictureParameterSets.first?.getInteger(at: record.pictureParameterSets.first?.readerIndex ?? 0, as: UInt8.self) == 0x68)

        let sps = record.sequenceParameterSet
        #expect(sps.profileIdc == testCase.profileIdc)
        #expect(sps.constraintFlags == testCase.constraintFlags)
        #expect(sps.levelIdc == testCase.levelIdc)
        #expect(sps.chromaFormatIdc == testCase.chromaFormatIdc)
        #expect(sps.bitDepthLuma == testCase.bitDepth)
        #expect(sps.bitDepthChroma == testCase.bitDepth)
        #expect(sps.frameMbsOnly)
        #expect(sps.width == testCase.width)
        #expect(sps.height == testCase.height)
        #expect(sps.frameRate == testCase.frameRate)
        #expect(sps.sampleAspectRatio == testCase.sampleAspectRatio)
    }

    @Test func parameterSetsAreSlicesOfTheInput() throws {
        let record = try AVCDecoderConfigurationRecord(from: ByteBuffer(hex: Vectors.avcHigh720TagBody).dropping(5))
        #expect(record.sequenceParameterSets.first?.hexString == "6764001facd9405005bb0110000003001000000303c0f1831960")
        #expect(record.pictureParameterSets.first?.hexString == "68ebe3cb22c0")
    }

    @Test func parsesHighProfileScalingListsInterlacingAndEmulationPrevention() throws {
        let sps = try AVCSequenceParameterSet(nalUnit: ByteBuffer(hex: Vectors.avcHighProfile444InterlacedSPS))
        #expect(sps.profileIdc == 244)
        #expect(sps.levelIdc == 40)
        #expect(sps.chromaFormatIdc == 3)
        #expect(!sps.separateColourPlane)
        #expect(!sps.frameMbsOnly)
        #expect(sps.width == 1920)
        #expect(sps.height == 1080)
        #expect(sps.sampleAspectRatio == .init(width: 4, height: 3))
        // 60000 / 1001 / 2 ticks per frame; the 1001 sits right after an escaped 00 00 03.
        #expect(sps.timing == .init(numUnitsInTick: 1001, timeScale: 60000, fixedFrameRate: true))
        let frameRate = try #require(sps.frameRate)
        #expect(abs(frameRate - 29.97) < 0.001)
    }

    @Test func wrapsAHandMadeSPSInARecord() throws {
        // configurationVersion 1, profile 244, compat 0, level 40, 0xFF (4-byte lengths),
        // one SPS, one PPS (68 ce 3c 80).
        let sps = Vectors.avcHighProfile444InterlacedSPS
        let spsLength = sps.count / 2
        let hex = "01f40028ff e1 00\(String(spsLength, radix: 16)) \(sps) 01 0004 68ce3c80"
        let record = try AVCDecoderConfigurationRecord(from: ByteBuffer(hex: hex))
        #expect(record.codecString == "avc1.f40028")
        #expect(record.sequenceParameterSet.height == 1080)
    }

    @Test(arguments: [
        ("empty", "", CodecConfigError.truncated(needed: 6, available: 0)),
        ("five bytes", "0164001fff", .truncated(needed: 6, available: 5)),
        ("version 0", "0064001fffe1001a", .unsupportedConfigurationVersion(0)),
        ("3-byte NAL lengths", "0164001ffee1001a", .invalidNALUnitLengthSize(3)),
        ("no SPS", "0164001fffe0", .missingSequenceParameterSet),
        ("SPS length beyond the data", "0164001fffe1001a6764", .truncated(needed: 26, available: 2)),
        ("SPS length over the cap", "0164001fffe11001", .parameterSetTooLarge(length: 4097, limit: 4096)),
        ("zero-length SPS", "0164001fffe10000", .valueOutOfRange(field: "parameterSetLength", value: 0)),
        ("PPS in the SPS slot", "0164001fffe1000268eb", .unexpectedNALUnitType(expected: 7, actual: 8)),
        ("missing PPS count", "0164001fffe100036764ff", .truncated(needed: 1, available: 0)),
        ("truncated SPS body", "0164001fffe100036764ff00", .bitstreamExhausted(bitOffset: 16, requested: 8)),
        ("SPS in the PPS slot", "0164001fffe100046764001f01000267ff", .unexpectedNALUnitType(expected: 8, actual: 7)),
    ])
    func rejectsMalformedRecords(name: String, hex: String, error: CodecConfigError) {
        #expect(throws: error) {
            try AVCDecoderConfigurationRecord(from: ByteBuffer(hex: hex))
        }
    }

    @Test func rejectsCroppingLargerThanThePicture() throws {
        // Hand-made baseline SPS (Python bit writer): one 16x16 macroblock, frame cropping
        // with frame_crop_right_offset 9, i.e. 18 pixels off a 16-pixel-wide picture.
        let sps = ByteBuffer(hex: "6742000addf8ad")
        #expect(throws: CodecConfigError.invalidDimensions(width: -2, height: 16)) {
            try AVCSequenceParameterSet(nalUnit: sps)
        }
    }

    @Test func everyTruncationOfARealRecordThrowsATypedError() throws {
        let record = ByteBuffer(hex: Vectors.avcHigh720TagBody).dropping(5)
        // The last 4 bytes are the optional high-profile extension; cutting into them still parses.
        let requiredLength = record.readableBytes - 4
        for length in 0..<requiredLength {
            let prefix = record.getSlice(at: record.readerIndex, length: length) ?? ByteBuffer()
            #expect(throws: CodecConfigError.self) {
                try AVCDecoderConfigurationRecord(from: prefix)
            }
        }
    }

    @Test func garbageNeverTraps() {
        // A deterministic pseudo-random walk over short inputs: every outcome is a value or a typed error.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for length in 0..<400 {
            var bytes: [UInt8] = [1, 0x64, 0, 0x1F, 0xFF, 0xE1, 0, UInt8(length % 40)]
            for _ in 0..<(length % 48) {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                bytes.append(UInt8(truncatingIfNeeded: state >> 33))
            }
            if bytes.count > 8 { bytes[8] = 0x67 }
            _ = try? AVCDecoderConfigurationRecord(from: ByteBuffer(bytes: bytes))
        }
    }
}
