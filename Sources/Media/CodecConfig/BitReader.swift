import NIOCore

/// An MSB-first bit reader over a byte array, as used by H.264/H.265 parameter sets
/// (ISO 14496-10 7.2) and the AAC AudioSpecificConfig (ISO 14496-3 1.6.2.1).
///
/// Every read is bounds-checked and throws `CodecConfigError.bitstreamExhausted` rather
/// than trapping; input is always peer-controlled.
public struct BitReader: Sendable {
    private let bytes: [UInt8]
    /// The position of the next bit to read, counted from the first bit of the input.
    public private(set) var bitOffset: Int = 0

    /// Reads `bytes` as they are (no emulation-prevention removal).
    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Reads the readable bytes of `buffer` (no emulation-prevention removal).
    public init(buffer: ByteBuffer) {
        self.bytes = Array(buffer.readableBytesView)
    }

    /// Bits left to read.
    public var bitsRemaining: Int {
        bytes.count * 8 - bitOffset
    }

    /// Reads `count` bits (0...32) as an unsigned big-endian number.
    public mutating func readBits(_ count: Int) throws(CodecConfigError) -> UInt32 {
        guard count >= 0, count <= 32 else {
            throw .valueOutOfRange(field: "bitCount", value: count)
        }
        guard count <= bitsRemaining else {
            throw .bitstreamExhausted(bitOffset: bitOffset, requested: count)
        }
        var value: UInt64 = 0
        var remaining = count
        while remaining > 0 {
            let byte = bytes[bitOffset >> 3]
            let bitInByte = bitOffset & 7
            let available = 8 - bitInByte
            let take = min(available, remaining)
            let shifted = (UInt32(byte) >> UInt32(available - take)) & ((1 << UInt32(take)) - 1)
            value = (value << UInt64(take)) | UInt64(shifted)
            remaining -= take
            bitOffset += take
        }
        return UInt32(truncatingIfNeeded: value)
    }

    /// Reads one bit as a flag.
    public mutating func readFlag() throws(CodecConfigError) -> Bool {
        try readBits(1) == 1
    }

    /// Reads `count` bits (at most 64) as an unsigned big-endian number.
    public mutating func readBits64(_ count: Int) throws(CodecConfigError) -> UInt64 {
        guard count >= 0, count <= 64 else {
            throw .valueOutOfRange(field: "bitCount", value: count)
        }
        if count <= 32 {
            return UInt64(try readBits(count))
        }
        let high = UInt64(try readBits(count - 32))
        let low = UInt64(try readBits(32))
        return (high << 32) | low
    }

    /// Skips `count` bits.
    public mutating func skipBits(_ count: Int) throws(CodecConfigError) {
        guard count >= 0, count <= bitsRemaining else {
            throw .bitstreamExhausted(bitOffset: bitOffset, requested: count)
        }
        bitOffset += count
    }

    /// Reads an unsigned exp-Golomb code, ue(v) (ISO 14496-10 9.1).
    ///
    /// Codes with more than 31 leading zeros would not fit in 32 bits and are rejected.
    public mutating func readUnsignedExpGolomb() throws(CodecConfigError) -> UInt32 {
        let start = bitOffset
        var leadingZeros = 0
        while try readBits(1) == 0 {
            leadingZeros += 1
            guard leadingZeros <= 31 else {
                throw .expGolombOverflow(bitOffset: start)
            }
        }
        guard leadingZeros > 0 else { return 0 }
        let suffix = UInt64(try readBits(leadingZeros))
        let value = (UInt64(1) << UInt64(leadingZeros)) - 1 + suffix
        guard value <= UInt64(UInt32.max) else {
            throw .expGolombOverflow(bitOffset: start)
        }
        return UInt32(value)
    }

    /// Reads a signed exp-Golomb code, se(v) (ISO 14496-10 9.1.1).
    public mutating func readSignedExpGolomb() throws(CodecConfigError) -> Int32 {
        let codeNum = Int64(try readUnsignedExpGolomb())
        // codeNum k maps to (-1)^(k+1) * ceil(k / 2).
        let magnitude = (codeNum + 1) / 2
        return Int32(truncatingIfNeeded: codeNum & 1 == 1 ? magnitude : -magnitude)
    }

    /// Reads ue(v) and checks it is at most `limit`, naming `field` in the error.
    public mutating func readUnsignedExpGolomb(_ field: String, max limit: UInt32) throws(CodecConfigError) -> UInt32 {
        let value = try readUnsignedExpGolomb()
        guard value <= limit else {
            throw .valueOutOfRange(field: field, value: Int(value))
        }
        return value
    }

    /// Converts a NAL unit (or any escaped payload) to its raw byte sequence payload by
    /// removing emulation-prevention bytes: every `00 00 03` becomes `00 00`
    /// (ISO 14496-10 7.4.1, ISO 23008-2 7.4.2).
    public static func removingEmulationPrevention(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.underestimatedCount)
        var zeroCount = 0
        for byte in bytes {
            if zeroCount >= 2, byte == 0x03 {
                zeroCount = 0
                continue
            }
            output.append(byte)
            zeroCount = byte == 0 ? zeroCount + 1 : 0
        }
        return output
    }
}
