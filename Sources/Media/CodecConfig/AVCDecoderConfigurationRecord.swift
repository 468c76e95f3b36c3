import NIOCore

/// An H.264 decoder configuration record, `AVCDecoderConfigurationRecord`
/// (ISO 14496-15 5.3.3.1): the body of an FLV/RTMP AVC sequence header and of an MP4 `avcC` box.
///
/// The parameter sets are slices of the input buffer (no copy). The first SPS is parsed into
/// `sequenceParameterSet` so the server knows the picture size, profile and frame rate.
public struct AVCDecoderConfigurationRecord: Sendable {
    /// At most 32 SPS: `numOfSequenceParameterSets` is 5 bits and `seq_parameter_set_id` is 0...31.
    public static let maxSequenceParameterSets = 31
    /// At most 256 PPS: `pic_parameter_set_id` is 0...255 (and the count is 8 bits).
    public static let maxPictureParameterSets = 255
    /// Real parameter sets are tens of bytes; even an SPS with full 4:4:4 scaling matrices
    /// and HRD parameters stays well under 1 KiB. 4 KiB leaves room and bounds the work.
    public static let maxParameterSetLength = 4096

    /// Always 1.
    public var configurationVersion: UInt8
    /// `AVCProfileIndication`, the SPS `profile_idc`.
    public var profileIndication: UInt8
    /// `profile_compatibility`, the byte of SPS constraint flags.
    public var profileCompatibility: UInt8
    /// `AVCLevelIndication`, the SPS `level_idc`.
    public var levelIndication: UInt8
    /// Bytes in each NAL unit length prefix of the coded frames: 1, 2 or 4.
    public var nalUnitLengthSize: Int
    /// The SPS NAL units, header byte included.
    public var sequenceParameterSets: [ByteBuffer]
    /// The PPS NAL units, header byte included.
    public var pictureParameterSets: [ByteBuffer]
    /// The first SPS, parsed.
    public var sequenceParameterSet: AVCSequenceParameterSet

    /// The RFC 6381 codec string, `avc1.PPCCLL` in lowercase hex (`avc1.64001f`).
    public var codecString: String {
        "avc1." + Self.hex(profileIndication) + Self.hex(profileCompatibility) + Self.hex(levelIndication)
    }

    /// Two lowercase hex digits.
    private static func hex(_ value: UInt8) -> String {
        let digits = String(value, radix: 16)
        return value < 0x10 ? "0" + digits : digits
    }

    /// Parses a record from the readable bytes of `buffer` (the buffer is not consumed).
    ///
    /// Bytes after the PPS (the high-profile chroma/bit-depth extension, or trailing
    /// padding some encoders add) are ignored: the SPS is authoritative for those values.
    public init(from buffer: ByteBuffer) throws(CodecConfigError) {
        var buffer = buffer
        guard buffer.readableBytes >= 6 else {
            throw .truncated(needed: 6, available: buffer.readableBytes)
        }
        configurationVersion = buffer.readInteger(as: UInt8.self) ?? 0
        guard configurationVersion == 1 else {
            throw .unsupportedConfigurationVersion(configurationVersion)
        }
        profileIndication = buffer.readInteger(as: UInt8.self) ?? 0
        profileCompatibility = buffer.readInteger(as: UInt8.self) ?? 0
        levelIndication = buffer.readInteger(as: UInt8.self) ?? 0
        let lengthSizeByte = buffer.readInteger(as: UInt8.self) ?? 0
        nalUnitLengthSize = Int(lengthSizeByte & 0x03) + 1
        guard nalUnitLengthSize != 3 else {
            throw .invalidNALUnitLengthSize(nalUnitLengthSize)
        }
        let spsCount = Int((buffer.readInteger(as: UInt8.self) ?? 0) & 0x1F)
        guard spsCount > 0 else {
            throw .missingSequenceParameterSet
        }
        guard spsCount <= Self.maxSequenceParameterSets else {
            throw .tooManyParameterSets(count: spsCount, limit: Self.maxSequenceParameterSets)
        }
        sequenceParameterSets = try Self.readParameterSets(count: spsCount, nalUnitType: 7, from: &buffer)

        guard let ppsCountByte = buffer.readInteger(as: UInt8.self) else {
            throw .truncated(needed: 1, available: 0)
        }
        let ppsCount = Int(ppsCountByte)
        guard ppsCount <= Self.maxPictureParameterSets else {
            throw .tooManyParameterSets(count: ppsCount, limit: Self.maxPictureParameterSets)
        }
        pictureParameterSets = try Self.readParameterSets(count: ppsCount, nalUnitType: 8, from: &buffer)

        sequenceParameterSet = try AVCSequenceParameterSet(nalUnit: sequenceParameterSets[0])
    }

    private static func readParameterSets(
        count: Int,
        nalUnitType: UInt8,
        from buffer: inout ByteBuffer
    ) throws(CodecConfigError) -> [ByteBuffer] {
        var sets: [ByteBuffer] = []
        for _ in 0..<count {
            guard let length = buffer.readInteger(as: UInt16.self) else {
                throw .truncated(needed: 2, available: buffer.readableBytes)
            }
            let byteCount = Int(length)
            guard byteCount > 0 else {
                throw .valueOutOfRange(field: "parameterSetLength", value: 0)
            }
            guard byteCount <= maxParameterSetLength else {
                throw .parameterSetTooLarge(length: byteCount, limit: maxParameterSetLength)
            }
            guard let nalUnit = buffer.readSlice(length: byteCount) else {
                throw .truncated(needed: byteCount, available: buffer.readableBytes)
            }
            let actualType = (nalUnit.getInteger(at: nalUnit.readerIndex, as: UInt8.self) ?? 0) & 0x1F
            guard actualType == nalUnitType else {
                throw .unexpectedNALUnitType(expected: nalUnitType, actual: actualType)
            }
            sets.append(nalUnit)
        }
        return sets
    }
}
