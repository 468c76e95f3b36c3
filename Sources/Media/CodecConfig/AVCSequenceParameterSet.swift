import NIOCore

/// The fields of an H.264 sequence parameter set (ISO 14496-10 7.3.2.1.1) that a server
/// needs: profile, level, chroma format, bit depth, the displayed picture size, and the
/// VUI frame rate and sample aspect ratio when the encoder sent them.
public struct AVCSequenceParameterSet: Sendable, Equatable {
    /// A sample (pixel) aspect ratio, `width:height`.
    public struct SampleAspectRatio: Sendable, Equatable {
        public var width: Int
        public var height: Int

        public init(width: Int, height: Int) {
            self.width = width
            self.height = height
        }
    }

    /// VUI timing information (ISO 14496-10 E.1.1).
    public struct Timing: Sendable, Equatable {
        public var numUnitsInTick: UInt32
        public var timeScale: UInt32
        public var fixedFrameRate: Bool

        public init(numUnitsInTick: UInt32, timeScale: UInt32, fixedFrameRate: Bool) {
            self.numUnitsInTick = numUnitsInTick
            self.timeScale = timeScale
            self.fixedFrameRate = fixedFrameRate
        }

        /// Frames per second: one frame is two field ticks, so `timeScale / (2 * numUnitsInTick)`.
        /// Nil when either value is zero (forbidden, but seen).
        public var frameRate: Double? {
            guard numUnitsInTick > 0, timeScale > 0 else { return nil }
            return Double(timeScale) / (2 * Double(numUnitsInTick))
        }
    }

    /// `profile_idc` (66 baseline, 77 main, 100 high, 110 high 10, 122 high 4:2:2, 244 high 4:4:4).
    public var profileIdc: UInt8
    /// `constraint_set0_flag` … `constraint_set5_flag` and the two reserved bits, as sent.
    public var constraintFlags: UInt8
    /// `level_idc` (31 = level 3.1).
    public var levelIdc: UInt8
    public var seqParameterSetID: UInt32
    /// 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4. Defaults to 1 for profiles without the field.
    public var chromaFormatIdc: UInt8
    public var separateColourPlane: Bool
    public var bitDepthLuma: Int
    public var bitDepthChroma: Int
    public var frameMbsOnly: Bool
    /// Displayed width in luma samples, after frame cropping.
    public var width: Int
    /// Displayed height in luma samples, after frame cropping (frame height for interlaced).
    public var height: Int
    /// Nil when the VUI is absent or has no aspect ratio.
    public var sampleAspectRatio: SampleAspectRatio?
    /// Nil when the VUI is absent or has no timing information.
    public var timing: Timing?

    /// Frames per second from the VUI timing information, if present.
    public var frameRate: Double? { timing?.frameRate }

    /// Profiles whose SPS carries chroma format, bit depth and scaling matrices (7.3.2.1.1).
    private static let highProfiles: Set<UInt8> = [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135]

    /// Table E-1: aspect_ratio_idc 1...16.
    private static let aspectRatioTable: [(Int, Int)] = [
        (1, 1), (12, 11), (10, 11), (16, 11), (40, 33), (24, 11), (20, 11), (32, 11),
        (80, 33), (18, 11), (15, 11), (64, 33), (160, 99), (4, 3), (3, 2), (2, 1),
    ]

    /// Parses a complete SPS NAL unit (header byte included, emulation prevention still present).
    public init(nalUnit: ByteBuffer) throws(CodecConfigError) {
        guard let header = nalUnit.getInteger(at: nalUnit.readerIndex, as: UInt8.self) else {
            throw .truncated(needed: 1, available: 0)
        }
        let nalUnitType = header & 0x1F
        guard nalUnitType == 7 else {
            throw .unexpectedNALUnitType(expected: 7, actual: nalUnitType)
        }
        let rbsp = BitReader.removingEmulationPrevention(nalUnit.readableBytesView.dropFirst())
        var reader = BitReader(bytes: rbsp)
        try self.init(rbsp: &reader)
    }

    private init(rbsp reader: inout BitReader) throws(CodecConfigError) {
        profileIdc = UInt8(try reader.readBits(8))
        constraintFlags = UInt8(try reader.readBits(8))
        levelIdc = UInt8(try reader.readBits(8))
        seqParameterSetID = try reader.readUnsignedExpGolomb("seq_parameter_set_id", max: 31)

        chromaFormatIdc = 1
        separateColourPlane = false
        bitDepthLuma = 8
        bitDepthChroma = 8
        if Self.highProfiles.contains(profileIdc) {
            chromaFormatIdc = UInt8(try reader.readUnsignedExpGolomb("chroma_format_idc", max: 3))
            if chromaFormatIdc == 3 {
                separateColourPlane = try reader.readFlag()
            }
            bitDepthLuma = 8 + Int(try reader.readUnsignedExpGolomb("bit_depth_luma_minus8", max: 6))
            bitDepthChroma = 8 + Int(try reader.readUnsignedExpGolomb("bit_depth_chroma_minus8", max: 6))
            _ = try reader.readFlag()  // qpprime_y_zero_transform_bypass_flag
            if try reader.readFlag() {  // seq_scaling_matrix_present_flag
                let listCount = chromaFormatIdc == 3 ? 12 : 8
                for index in 0..<listCount {
                    if try reader.readFlag() {  // seq_scaling_list_present_flag[index]
                        try Self.skipScalingList(&reader, size: index < 6 ? 16 : 64)
                    }
                }
            }
        }

        _ = try reader.readUnsignedExpGolomb("log2_max_frame_num_minus4", max: 12)
        let picOrderCountType = try reader.readUnsignedExpGolomb("pic_order_cnt_type", max: 2)
        if picOrderCountType == 0 {
            _ = try reader.readUnsignedExpGolomb("log2_max_pic_order_cnt_lsb_minus4", max: 12)
        } else if picOrderCountType == 1 {
            _ = try reader.readFlag()  // delta_pic_order_always_zero_flag
            _ = try reader.readSignedExpGolomb()  // offset_for_non_ref_pic
            _ = try reader.readSignedExpGolomb()  // offset_for_top_to_bottom_field
            let cycleLength = try reader.readUnsignedExpGolomb("num_ref_frames_in_pic_order_cnt_cycle", max: 255)
            for _ in 0..<cycleLength {
                _ = try reader.readSignedExpGolomb()
            }
        }
        _ = try reader.readUnsignedExpGolomb()  // max_num_ref_frames
        _ = try reader.readFlag()  // gaps_in_frame_num_value_allowed_flag
        // 16384 macroblocks across is far beyond any level limit (level 6.2 allows 8704 mb
        // on one side); the bound keeps the arithmetic below meaningful.
        let widthInMbs = Int(try reader.readUnsignedExpGolomb("pic_width_in_mbs_minus1", max: 16_383)) + 1
        let heightInMapUnits = Int(try reader.readUnsignedExpGolomb("pic_height_in_map_units_minus1", max: 16_383)) + 1
        frameMbsOnly = try reader.readFlag()
        if !frameMbsOnly {
            _ = try reader.readFlag()  // mb_adaptive_frame_field_flag
        }
        _ = try reader.readFlag()  // direct_8x8_inference_flag

        var cropLeft = 0, cropRight = 0, cropTop = 0, cropBottom = 0
        if try reader.readFlag() {  // frame_cropping_flag
            cropLeft = Int(try reader.readUnsignedExpGolomb())
            cropRight = Int(try reader.readUnsignedExpGolomb())
            cropTop = Int(try reader.readUnsignedExpGolomb())
            cropBottom = Int(try reader.readUnsignedExpGolomb())
        }

        // 7.4.2.1.1: crop offsets are in chroma sample units (doubled vertically for fields).
        let chromaArrayType = separateColourPlane ? 0 : chromaFormatIdc
        let fieldFactor = frameMbsOnly ? 1 : 2
        let cropUnitX: Int
        let cropUnitY: Int
        switch chromaArrayType {
        case 1: (cropUnitX, cropUnitY) = (2, 2 * fieldFactor)
        case 2: (cropUnitX, cropUnitY) = (2, fieldFactor)
        case 3: (cropUnitX, cropUnitY) = (1, fieldFactor)
        default: (cropUnitX, cropUnitY) = (1, fieldFactor)
        }
        width = widthInMbs * 16 - cropUnitX * (cropLeft + cropRight)
        height = fieldFactor * heightInMapUnits * 16 - cropUnitY * (cropTop + cropBottom)
        guard width > 0, height > 0 else {
            throw .invalidDimensions(width: width, height: height)
        }

        sampleAspectRatio = nil
        timing = nil
        if try reader.readFlag() {  // vui_parameters_present_flag
            // The VUI only adds display hints; a broken or truncated one (seen from some
            // hardware encoders) must not reject a stream whose size is already known.
            var vuiReader = reader
            if let vui = try? Self.parseVUI(&vuiReader) {
                sampleAspectRatio = vui.sampleAspectRatio
                timing = vui.timing
            }
        }
    }

    /// 7.3.2.1.1.1 scaling_list(): only the bit positions matter here.
    private static func skipScalingList(_ reader: inout BitReader, size: Int) throws(CodecConfigError) {
        var lastScale: Int32 = 8
        var nextScale: Int32 = 8
        for _ in 0..<size {
            if nextScale != 0 {
                let delta = try reader.readSignedExpGolomb()
                guard (-128...127).contains(delta) else {
                    throw .valueOutOfRange(field: "delta_scale", value: Int(delta))
                }
                nextScale = (lastScale + delta + 256) % 256
            }
            lastScale = nextScale == 0 ? lastScale : nextScale
        }
    }

    private static func parseVUI(
        _ reader: inout BitReader
    ) throws(CodecConfigError) -> (sampleAspectRatio: SampleAspectRatio?, timing: Timing?) {
        var sampleAspectRatio: SampleAspectRatio?
        if try reader.readFlag() {  // aspect_ratio_info_present_flag
            let idc = Int(try reader.readBits(8))
            if idc == 255 {  // Extended_SAR
                let sarWidth = Int(try reader.readBits(16))
                let sarHeight = Int(try reader.readBits(16))
                if sarWidth > 0, sarHeight > 0 {
                    sampleAspectRatio = SampleAspectRatio(width: sarWidth, height: sarHeight)
                }
            } else if idc >= 1, idc <= aspectRatioTable.count {
                let (sarWidth, sarHeight) = aspectRatioTable[idc - 1]
                sampleAspectRatio = SampleAspectRatio(width: sarWidth, height: sarHeight)
            }
        }
        if try reader.readFlag() {  // overscan_info_present_flag
            _ = try reader.readFlag()
        }
        if try reader.readFlag() {  // video_signal_type_present_flag
            try reader.skipBits(3 + 1)  // video_format, video_full_range_flag
            if try reader.readFlag() {  // colour_description_present_flag
                try reader.skipBits(24)
            }
        }
        if try reader.readFlag() {  // chroma_loc_info_present_flag
            _ = try reader.readUnsignedExpGolomb()
            _ = try reader.readUnsignedExpGolomb()
        }
        var timing: Timing?
        if try reader.readFlag() {  // timing_info_present_flag
            let numUnitsInTick = try reader.readBits(32)
            let timeScale = try reader.readBits(32)
            let fixedFrameRate = try reader.readFlag()
            timing = Timing(numUnitsInTick: numUnitsInTick, timeScale: timeScale, fixedFrameRate: fixedFrameRate)
        }
        return (sampleAspectRatio, timing)
    }
}
