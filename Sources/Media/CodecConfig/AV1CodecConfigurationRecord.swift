import NIOCore

/// An AV1CodecConfigurationRecord (`av1C`, AV1 Codec ISO Media File Format Binding 2.3), as
/// an Enhanced RTMP `av01` sequence start carries it: four bytes of profile, level, tier and
/// colour format, then the configuration OBUs, whose sequence header gives the picture size.
///
/// A bounded parser of publisher input: every read is checked, and a record without a
/// sequence header OBU, or with one that does not parse, throws.
public struct AV1CodecConfigurationRecord: Sendable, Equatable {
    /// `seq_profile`: 0 Main, 1 High, 2 Professional.
    public var profile: UInt8
    /// `seq_level_idx[0]`: 0…31 (8 is level 4.0).
    public var level: UInt8
    /// `seq_tier[0]`: false Main, true High.
    public var highTier: Bool
    /// 8, 10 or 12.
    public var bitDepth: Int
    public var monochrome: Bool
    /// The largest picture the sequence codes (`max_frame_width_minus_1 + 1`, …).
    public var width: Int
    public var height: Int

    /// The longest configuration the parser reads; a sequence header is tens of bytes.
    public static let maxLength = 4096

    /// `av01.P.LLT.DD` (AV1 ISO Media binding, "Codecs Parameter String"), for HLS's `CODECS`:
    /// `av01.0.08M.08` is Main profile, level 4.0, Main tier, 8 bits.
    public var codecString: String {
        let level = self.level < 10 ? "0\(self.level)" : "\(self.level)"
        let depth = bitDepth < 10 ? "0\(bitDepth)" : "\(bitDepth)"
        return "av01.\(profile).\(level)\(highTier ? "H" : "M").\(depth)"
    }

    public init(from buffer: ByteBuffer) throws(CodecConfigError) {
        guard buffer.readableBytes >= 4 else { throw .truncated(needed: 4, available: buffer.readableBytes) }
        guard buffer.readableBytes <= Self.maxLength else { throw .parameterSetTooLarge(length: buffer.readableBytes, limit: Self.maxLength) }
        let bytes = Array(buffer.readableBytesView)
        // marker (1) = 1, version (7) = 1.
        guard bytes[0] == 0x81 else { throw .unsupportedConfigurationVersion(bytes[0]) }
        profile = bytes[1] >> 5
        level = bytes[1] & 0x1F
        highTier = bytes[2] & 0x80 != 0
        let highBitDepth = bytes[2] & 0x40 != 0
        let twelveBit = bytes[2] & 0x20 != 0
        bitDepth = highBitDepth ? (twelveBit ? 12 : 10) : 8
        monochrome = bytes[2] & 0x10 != 0
        let size = try Self.pictureSize(configOBUs: bytes[4...])
        width = size.width
        height = size.height
    }

    /// The maximum picture size from the sequence header OBU among `configOBUs`.
    static func pictureSize(configOBUs: ArraySlice<UInt8>) throws(CodecConfigError) -> (width: Int, height: Int) {
        var index = configOBUs.startIndex
        while index < configOBUs.endIndex {
            let header = configOBUs[index]
            let type = (header >> 3) & 0x0F
            let hasExtension = header & 0x04 != 0
            let hasSize = header & 0x02 != 0
            index += hasExtension ? 2 : 1
            guard index <= configOBUs.endIndex else { throw .truncated(needed: 1, available: 0) }
            let payloadSize: Int
            if hasSize {
                (payloadSize, index) = try leb128(configOBUs, at: index)
            } else {
                payloadSize = configOBUs.endIndex - index  // the last OBU runs to the end
            }
            guard payloadSize <= configOBUs.endIndex - index else {
                throw .truncated(needed: payloadSize, available: configOBUs.endIndex - index)
            }
            if type == 1 {  // OBU_SEQUENCE_HEADER
                return try sequenceHeaderSize(Array(configOBUs[index..<(index + payloadSize)]))
            }
            index += payloadSize
        }
        throw .missingSequenceParameterSet
    }

    /// leb128 (AV1 4.10.5): at most 8 bytes, a value that fits in 32 bits.
    static func leb128(_ bytes: ArraySlice<UInt8>, at start: Int) throws(CodecConfigError) -> (value: Int, next: Int) {
        var value = 0
        var index = start
        for byteIndex in 0..<8 {
            guard index < bytes.endIndex else { throw .truncated(needed: 1, available: 0) }
            let byte = bytes[index]
            index += 1
            value |= Int(byte & 0x7F) << (7 * byteIndex)
            if byte & 0x80 == 0 {
                guard value <= Int(UInt32.max) else { throw .valueOutOfRange(field: "leb128", value: value) }
                return (value, index)
            }
        }
        throw .valueOutOfRange(field: "leb128", value: value)
    }

    /// `sequence_header_obu()` (AV1 5.5.1) as far as `max_frame_height_minus_1`.
    static func sequenceHeaderSize(_ payload: [UInt8]) throws(CodecConfigError) -> (width: Int, height: Int) {
        var reader = BitReader(bytes: payload)
        _ = try reader.readBits(3)  // seq_profile
        _ = try reader.readFlag()  // still_picture
        let reducedStillPictureHeader = try reader.readFlag()
        if reducedStillPictureHeader {
            _ = try reader.readBits(5)  // seq_level_idx[0]
        } else {
            var bufferDelayLength = 0
            let timingInfoPresent = try reader.readFlag()
            var decoderModelInfoPresent = false
            if timingInfoPresent {
                try reader.skipBits(64)  // num_units_in_display_tick, time_scale
                if try reader.readFlag() {  // equal_picture_interval
                    _ = try reader.readUnsignedExpGolomb()  // num_ticks_per_picture_minus_1, uvlc()
                }
                decoderModelInfoPresent = try reader.readFlag()
                if decoderModelInfoPresent {
                    bufferDelayLength = Int(try reader.readBits(5)) + 1
                    try reader.skipBits(32 + 5 + 5)  // num_units_in_decoding_tick, two lengths
                }
            }
            let initialDisplayDelayPresent = try reader.readFlag()
            let operatingPoints = Int(try reader.readBits(5)) + 1
            for _ in 0..<operatingPoints {
                try reader.skipBits(12)  // operating_point_idc
                let levelIndex = try reader.readBits(5)
                if levelIndex > 7 { try reader.skipBits(1) }  // seq_tier
                if decoderModelInfoPresent, try reader.readFlag() {
                    try reader.skipBits(2 * bufferDelayLength + 1)  // decoder/encoder buffer delay, low_delay_mode_flag
                }
                if initialDisplayDelayPresent, try reader.readFlag() {
                    try reader.skipBits(4)
                }
            }
        }
        let widthBits = Int(try reader.readBits(4)) + 1
        let heightBits = Int(try reader.readBits(4)) + 1
        let width = Int(try reader.readBits(widthBits)) + 1
        let height = Int(try reader.readBits(heightBits)) + 1
        return (width, height)
    }
}
