import Media
import NIOCore
import Testing

struct BitReaderTests {
    @Test func readsBitsMSBFirstAcrossByteBoundaries() throws {
        var reader = BitReader(bytes: [0b1010_1100, 0b0101_0011])
        #expect(try reader.readBits(1) == 1)
        #expect(try reader.readBits(3) == 0b010)
        #expect(try reader.readBits(8) == 0b1100_0101)
        #expect(reader.bitsRemaining == 4)
        #expect(try reader.readBits(4) == 0b0011)
        #expect(reader.bitsRemaining == 0)
    }

    @Test func reads32And64BitValues() throws {
        var reader = BitReader(bytes: [0xDE, 0xAD, 0xBE, 0xEF, 0x01, 0x23, 0x45, 0x67, 0x89])
        #expect(try reader.readBits(32) == 0xDEAD_BEEF)
        #expect(try reader.readBits64(40) == 0x01_2345_6789)
    }

    /// (bits, ue value): 1 -> 0, 010 -> 1, 011 -> 2, 00100 -> 3, 00111 -> 6, 0001000 -> 7.
    static let unsignedExpGolombCases: [([UInt8], UInt32)] = [
        ([0b1000_0000], 0),
        ([0b0100_0000], 1),
        ([0b0110_0000], 2),
        ([0b0010_0000], 3),
        ([0b0011_1000], 6),
        ([0b0001_0000], 7),
        // 15 zeros, a 1, then the 15-bit suffix 0x7FFF: 2^15 - 1 + 0x7FFF.
        ([0x00, 0x01, 0xFF, 0xFE], 65534),
    ]

    @Test(arguments: unsignedExpGolombCases)
    func unsignedExpGolomb(bytes: [UInt8], expected: UInt32) throws {
        var reader = BitReader(bytes: bytes)
        #expect(try reader.readUnsignedExpGolomb() == expected)
    }

    @Test func signedExpGolombAlternatesSign() throws {
        // codeNum 0,1,2,3,4 -> 0, 1, -1, 2, -2: bits 1 010 011 00100 00101
        var reader = BitReader(bytes: [0b1010_0110, 0b0100_0010, 0b1000_0000])
        #expect(try reader.readSignedExpGolomb() == 0)
        #expect(try reader.readSignedExpGolomb() == 1)
        #expect(try reader.readSignedExpGolomb() == -1)
        #expect(try reader.readSignedExpGolomb() == 2)
        #expect(try reader.readSignedExpGolomb() == -2)
    }

    @Test func largestUnsignedExpGolombFits() throws {
        // 31 zeros, a 1, then 31 ones: 2^31 - 1 + 2^31 - 1 = UInt32.max - 1.
        var reader = BitReader(bytes: [0x00, 0x00, 0x00, 0x01, 0xFF, 0xFF, 0xFF, 0xFE])
        #expect(try reader.readUnsignedExpGolomb() == UInt32.max - 1)
    }

    @Test func overlongExpGolombThrows() {
        var reader = BitReader(bytes: [0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        #expect(throws: CodecConfigError.expGolombOverflow(bitOffset: 0)) {
            try reader.readUnsignedExpGolomb()
        }
    }

    @Test func readingPastTheEndThrowsInsteadOfTrapping() throws {
        var reader = BitReader(bytes: [0xFF])
        _ = try reader.readBits(5)
        #expect(throws: CodecConfigError.bitstreamExhausted(bitOffset: 5, requested: 4)) {
            try reader.readBits(4)
        }
        var zeros = BitReader(bytes: [0x00])
        #expect(throws: CodecConfigError.bitstreamExhausted(bitOffset: 8, requested: 1)) {
            try zeros.readUnsignedExpGolomb()
        }
        var empty = BitReader(bytes: [])
        #expect(throws: CodecConfigError.bitstreamExhausted(bitOffset: 0, requested: 1)) {
            try empty.readFlag()
        }
        #expect(throws: CodecConfigError.bitstreamExhausted(bitOffset: 0, requested: 9)) {
            try empty.skipBits(9)
        }
    }

    static let emulationPreventionCases: [([UInt8], [UInt8])] = [
        ([0x00, 0x00, 0x03, 0x01], [0x00, 0x00, 0x01]),
        ([0x00, 0x00, 0x03, 0x00, 0x00, 0x03], [0x00, 0x00, 0x00, 0x00]),
        ([0x00, 0x03, 0x00], [0x00, 0x03, 0x00]),  // one zero only: not an escape
        ([0x00, 0x00, 0x00, 0x03, 0x03], [0x00, 0x00, 0x00, 0x03]),
        ([0x12, 0x00, 0x00, 0x03], [0x12, 0x00, 0x00]),  // trailing escape byte
        ([], []),
    ]

    @Test(arguments: emulationPreventionCases)
    func removesEmulationPreventionBytes(escaped: [UInt8], raw: [UInt8]) {
        #expect(BitReader.removingEmulationPrevention(escaped) == raw)
    }
}
