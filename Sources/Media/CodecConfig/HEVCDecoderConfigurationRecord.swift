import NIOCore

/// An H.265 decoder configuration record, `HEVCDecoderConfigurationRecord`
/// (ISO 14496-15 8.3.3.1): the body of an enhanced-RTMP `hvc1` sequence start (or a
/// codec-id-12 sequence header) and of an MP4 `hvcC` box.
///
/// NAL units are slices of the input buffer (no copy). The first SPS is parsed into
/// `sequenceParameterSet` for the picture size.
public struct HEVCDecoderConfigurationRecord: Sendable {
    /// HEVC NAL unit types found in configuration records (ISO 23008-2 Table 7-1).
    public enum NALUnitType {
        public static let videoParameterSet: UInt8 = 32
        public static let sequenceParameterSet: UInt8 = 33
        public static let pictureParameterSet: UInt8 = 34
        public static let prefixSEI: UInt8 = 39
        public static let suffixSEI: UInt8 = 40
    }

    /// One `array` entry of the record: NAL units of one type.
    public struct NALUnitArray: Sendable {
        /// True when every NAL unit of this type is in the array (none in the stream).
        public var arrayCompleteness: Bool
        public var nalUnitType: UInt8
        /// The NAL units, 2-byte header included.
        public var nalUnits: [ByteBuffer]
    }

    /// Parameter sets are tens of bytes, but encoders also put SEI here: x265 writes a
    /// ~2 KiB "encoder settings" SEI. 16 KiB leaves room for that and bounds the work.
    public static let maxNALUnitLength = 16_384
    /// At most 64 NAL units across all arrays: 16 VPS + 16 SPS + 64 PPS is the spec's
    /// ceiling, real encoders send one of each (plus an SEI), and the bound caps allocation.
    public static let maxNALUnits = 64

    /// Always 1.
    public var configurationVersion: UInt8
    public var generalProfileSpace: UInt8
    /// False: Main tier, true: High tier.
    public var generalTierFlag: Bool
    /// 1 Main, 2 Main 10, 3 Main Still Picture, 4 Range extensions, ...
    public var generalProfileIdc: UInt8
    public var generalProfileCompatibilityFlags: UInt32
    /// The 48 bits starting with `general_progressive_source_flag`.
    public var generalConstraintIndicatorFlags: UInt64
    /// Level times 30 (93 = level 3.1, 120 = level 4).
    public var generalLevelIdc: UInt8
    public var minSpatialSegmentationIdc: UInt16
    public var parallelismType: UInt8
    /// 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4.
    public var chromaFormatIdc: UInt8
    public var bitDepthLuma: Int
    public var bitDepthChroma: Int
    /// Frames per 256 seconds; 0 when unspecified.
    public var avgFrameRate: UInt16
    public var constantFrameRate: UInt8
    public var numTemporalLayers: UInt8
    public var temporalIdNested: Bool
    /// Bytes in each NAL unit length prefix of the coded frames: 1, 2 or 4.
    public var nalUnitLengthSize: Int
    public var arrays: [NALUnitArray]
    /// The first SPS, parsed.
    public var sequenceParameterSet: HEVCSequenceParameterSet

    public var videoParameterSets: [ByteBuffer] { nalUnits(ofType: NALUnitType.videoParameterSet) }
    public var sequenceParameterSets: [ByteBuffer] { nalUnits(ofType: NALUnitType.sequenceParameterSet) }
    public var pictureParameterSets: [ByteBuffer] { nalUnits(ofType: NALUnitType.pictureParameterSet) }

    /// All NAL units of one type, across arrays.
    public func nalUnits(ofType type: UInt8) -> [ByteBuffer] {
        arrays.filter { $0.nalUnitType == type }.flatMap(\.nalUnits)
    }

    /// The RFC 6381 codec string (ISO 14496-15 Annex E.3) for an `hvc1` sample entry, e.g.
    /// `hvc1.1.6.L93.B0`: profile space letter and profile idc, the compatibility flags
    /// bit-reversed in hex, tier letter and level, then the constraint bytes in hex with
    /// trailing zero bytes omitted.
    public var codecString: String {
        let spaces = ["", "A", "B", "C"]
        var reversedFlags: UInt32 = 0
        for bit in 0..<32 where generalProfileCompatibilityFlags & (1 << UInt32(bit)) != 0 {
            reversedFlags |= 1 << UInt32(31 - bit)
        }
        var string = "hvc1." + spaces[Int(generalProfileSpace & 0x03)] + String(generalProfileIdc)
        string += "." + String(reversedFlags, radix: 16, uppercase: true)
        string += "." + (generalTierFlag ? "H" : "L") + String(generalLevelIdc)
        var constraintBytes = (0..<6).map { index in
            UInt8(truncatingIfNeeded: generalConstraintIndicatorFlags >> UInt64(40 - 8 * index))
        }
        while constraintBytes.last == 0 {
            constraintBytes.removeLast()
        }
        for byte in constraintBytes {
            string += "." + String(byte, radix: 16, uppercase: true)
        }
        return string
    }

    /// Parses a record from the readable bytes of `buffer` (the buffer is not consumed).
    public init(from buffer: ByteBuffer) throws(CodecConfigError) {
        var buffer = buffer
        let fixedLength = 23
        guard buffer.readableBytes >= fixedLength else {
            throw .truncated(needed: fixedLength, available: buffer.readableBytes)
        }
        configurationVersion = buffer.readInteger(as: UInt8.self) ?? 0
        guard configurationVersion == 1 else {
            throw .unsupportedConfigurationVersion(configurationVersion)
        }
        let profileByte = buffer.readInteger(as: UInt8.self) ?? 0
        generalProfileSpace = profileByte >> 6
        generalTierFlag = profileByte & 0x20 != 0
        generalProfileIdc = profileByte & 0x1F
        generalProfileCompatibilityFlags = buffer.readInteger(as: UInt32.self) ?? 0
        let constraintHigh = UInt64(buffer.readInteger(as: UInt32.self) ?? 0)
        let constraintLow = UInt64(buffer.readInteger(as: UInt16.self) ?? 0)
        generalConstraintIndicatorFlags = constraintHigh << 16 | constraintLow
        generalLevelIdc = buffer.readInteger(as: UInt8.self) ?? 0
        minSpatialSegmentationIdc = (buffer.readInteger(as: UInt16.self) ?? 0) & 0x0FFF
        parallelismType = (buffer.readInteger(as: UInt8.self) ?? 0) & 0x03
        chromaFormatIdc = (buffer.readInteger(as: UInt8.self) ?? 0) & 0x03
        bitDepthLuma = 8 + Int((buffer.readInteger(as: UInt8.self) ?? 0) & 0x07)
        bitDepthChroma = 8 + Int((buffer.readInteger(as: UInt8.self) ?? 0) & 0x07)
        avgFrameRate = buffer.readInteger(as: UInt16.self) ?? 0
        let flags = buffer.readInteger(as: UInt8.self) ?? 0
        constantFrameRate = flags >> 6
        numTemporalLayers = (flags >> 3) & 0x07
        temporalIdNested = flags & 0x04 != 0
        nalUnitLengthSize = Int(flags & 0x03) + 1
        guard nalUnitLengthSize != 3 else {
            throw .invalidNALUnitLengthSize(nalUnitLengthSize)
        }

        let arrayCount = Int(buffer.readInteger(as: UInt8.self) ?? 0)
        var arrays: [NALUnitArray] = []
        var totalNALUnits = 0
        for _ in 0..<arrayCount {
            guard buffer.readableBytes >= 3,
                  let typeByte = buffer.readInteger(as: UInt8.self),
                  let nalUnitCount = buffer.readInteger(as: UInt16.self)
            else {
                throw .truncated(needed: 3, available: buffer.readableBytes)
            }
            totalNALUnits += Int(nalUnitCount)
            guard totalNALUnits <= Self.maxNALUnits else {
                throw .tooManyParameterSets(count: totalNALUnits, limit: Self.maxNALUnits)
            }
            let type = typeByte & 0x3F
            var nalUnits: [ByteBuffer] = []
            for _ in 0..<nalUnitCount {
                guard let length = buffer.readInteger(as: UInt16.self) else {
                    throw .truncated(needed: 2, available: buffer.readableBytes)
                }
                let byteCount = Int(length)
                guard byteCount >= 2 else {
                    throw .valueOutOfRange(field: "nalUnitLength", value: byteCount)
                }
                guard byteCount <= Self.maxNALUnitLength else {
                    throw .parameterSetTooLarge(length: byteCount, limit: Self.maxNALUnitLength)
                }
                guard let nalUnit = buffer.readSlice(length: byteCount) else {
                    throw .truncated(needed: byteCount, available: buffer.readableBytes)
                }
                let actualType = ((nalUnit.getInteger(at: nalUnit.readerIndex, as: UInt8.self) ?? 0) >> 1) & 0x3F
                guard actualType == type else {
                    throw .unexpectedNALUnitType(expected: type, actual: actualType)
                }
                nalUnits.append(nalUnit)
            }
            arrays.append(NALUnitArray(arrayCompleteness: typeByte & 0x80 != 0, nalUnitType: type, nalUnits: nalUnits))
        }
        self.arrays = arrays

        guard let firstSPS = arrays.first(where: { $0.nalUnitType == NALUnitType.sequenceParameterSet && !$0.nalUnits.isEmpty })?.nalUnits.first else {
            throw .missingSequenceParameterSet
        }
        sequenceParameterSet = try HEVCSequenceParameterSet(nalUnit: firstSPS)
    }
}
