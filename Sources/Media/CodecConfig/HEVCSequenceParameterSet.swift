import NIOCore

/// The leading fields of an H.265 sequence parameter set (ISO 23008-2 7.3.2.2.1), up to the
/// bit depths: enough for the profile, chroma format and the displayed picture size.
///
/// Parsing stops after `bit_depth_chroma_minus8`; the rest of the SPS (reference picture
/// sets, VUI) is not needed by the server.
public struct HEVCSequenceParameterSet: Sendable, Equatable {
    public var videoParameterSetID: UInt8
    public var maxSubLayers: Int
    public var generalProfileSpace: UInt8
    public var generalTierFlag: Bool
    public var generalProfileIdc: UInt8
    public var generalLevelIdc: UInt8
    public var seqParameterSetID: UInt32
    /// 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4.
    public var chromaFormatIdc: UInt8
    public var separateColourPlane: Bool
    /// Coded size, before the conformance window.
    public var codedWidth: Int
    public var codedHeight: Int
    /// Displayed width in luma samples, after the conformance window.
    public var width: Int
    /// Displayed height in luma samples, after the conformance window.
    public var height: Int
    public var bitDepthLuma: Int
    public var bitDepthChroma: Int

    /// Parses a complete SPS NAL unit (2-byte header included, emulation prevention still present).
    public init(nalUnit: ByteBuffer) throws(CodecConfigError) {
        guard let header = nalUnit.getInteger(at: nalUnit.readerIndex, as: UInt16.self) else {
            throw .truncated(needed: 2, available: nalUnit.readableBytes)
        }
        let nalUnitType = UInt8((header >> 9) & 0x3F)
        guard nalUnitType == HEVCDecoderConfigurationRecord.NALUnitType.sequenceParameterSet else {
            throw .unexpectedNALUnitType(expected: HEVCDecoderConfigurationRecord.NALUnitType.sequenceParameterSet, actual: nalUnitType)
        }
        var reader = BitReader(bytes: BitReader.removingEmulationPrevention(nalUnit.readableBytesView.dropFirst(2)))

        videoParameterSetID = UInt8(try reader.readBits(4))
        maxSubLayers = Int(try reader.readBits(3)) + 1
        guard maxSubLayers <= 7 else {
            throw .valueOutOfRange(field: "sps_max_sub_layers_minus1", value: maxSubLayers - 1)
        }
        _ = try reader.readFlag()  // sps_temporal_id_nesting_flag

        // profile_tier_level(1, sps_max_sub_layers_minus1), 7.3.3
        generalProfileSpace = UInt8(try reader.readBits(2))
        generalTierFlag = try reader.readFlag()
        generalProfileIdc = UInt8(try reader.readBits(5))
        try reader.skipBits(32 + 48)  // compatibility flags, constraint flags
        generalLevelIdc = UInt8(try reader.readBits(8))
        var subLayerProfilePresent: [Bool] = []
        var subLayerLevelPresent: [Bool] = []
        for _ in 0..<(maxSubLayers - 1) {
            subLayerProfilePresent.append(try reader.readFlag())
            subLayerLevelPresent.append(try reader.readFlag())
        }
        if maxSubLayers > 1 {
            try reader.skipBits(2 * (8 - (maxSubLayers - 1)))  // reserved_zero_2bits
        }
        for index in 0..<(maxSubLayers - 1) {
            if subLayerProfilePresent[index] { try reader.skipBits(88) }
            if subLayerLevelPresent[index] { try reader.skipBits(8) }
        }

        seqParameterSetID = try reader.readUnsignedExpGolomb("sps_seq_parameter_set_id", max: 15)
        chromaFormatIdc = UInt8(try reader.readUnsignedExpGolomb("chroma_format_idc", max: 3))
        separateColourPlane = chromaFormatIdc == 3 ? try reader.readFlag() : false
        // Level 6.2 allows 8192x4320 at most; 16888 is the spec's own bound (A.4.1, sqrt(MaxLumaPs * 8)).
        codedWidth = Int(try reader.readUnsignedExpGolomb("pic_width_in_luma_samples", max: 16_888))
        codedHeight = Int(try reader.readUnsignedExpGolomb("pic_height_in_luma_samples", max: 16_888))

        var left = 0, right = 0, top = 0, bottom = 0
        if try reader.readFlag() {  // conformance_window_flag
            left = Int(try reader.readUnsignedExpGolomb())
            right = Int(try reader.readUnsignedExpGolomb())
            top = Int(try reader.readUnsignedExpGolomb())
            bottom = Int(try reader.readUnsignedExpGolomb())
        }
        // Table 6-1: offsets are in chroma sample units.
        let chromaArrayType = separateColourPlane ? 0 : chromaFormatIdc
        let subWidth = chromaArrayType == 1 || chromaArrayType == 2 ? 2 : 1
        let subHeight = chromaArrayType == 1 ? 2 : 1
        width = codedWidth - subWidth * (left + right)
        height = codedHeight - subHeight * (top + bottom)
        guard width > 0, height > 0 else {
            throw .invalidDimensions(width: width, height: height)
        }
        bitDepthLuma = 8 + Int(try reader.readUnsignedExpGolomb("bit_depth_luma_minus8", max: 8))
        bitDepthChroma = 8 + Int(try reader.readUnsignedExpGolomb("bit_depth_chroma_minus8", max: 8))
    }
}
