import Media
import NIOCore

/// HEVC in Annex B (MPEG-TS from SRT encoders) to what Enhanced RTMP and MP4 carry.
extension NALUnits {
    /// The HEVC NAL unit type of the unit starting at `offset` (`nal_unit_type`, 6 bits).
    static func hevcType(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt8 {
        (bytes[offset] >> 1) & 0x3F
    }

    /// An `HEVCDecoderConfigurationRecord` (ISO 14496-15 8.3.3.1, `hvcC`) from the VPS, SPS
    /// and PPS of an Annex B access unit, as FFmpeg's `ff_isom_write_hvcc` writes it: the
    /// general profile, tier, level and flags from the SPS's profile_tier_level, chroma
    /// format and bit depths from the parsed SPS, 4-byte lengths, one array per type.
    ///
    /// The result is parsed back with Media's `HEVCDecoderConfigurationRecord` before it is
    /// returned. Throws `.missingParameterSets` without a VPS, an SPS and a PPS.
    public static func hevcDecoderConfigurationRecord(
        fromAnnexB bytes: UnsafeRawBufferPointer,
        allocator: ByteBufferAllocator = ByteBufferAllocator()
    ) throws(AVError) -> (bytes: ByteBuffer, record: HEVCDecoderConfigurationRecord) {
        var sets: [UInt8: [Range<Int>]] = [:]
        for range in try annexBRanges(bytes) where range.count >= 3 {
            let type = hevcType(bytes, at: range.lowerBound)
            guard [HEVCDecoderConfigurationRecord.NALUnitType.videoParameterSet, HEVCDecoderConfigurationRecord.NALUnitType.sequenceParameterSet,
                   HEVCDecoderConfigurationRecord.NALUnitType.pictureParameterSet].contains(type) else { continue }
            sets[type, default: []].append(range)
        }
        let types = [HEVCDecoderConfigurationRecord.NALUnitType.videoParameterSet, HEVCDecoderConfigurationRecord.NALUnitType.sequenceParameterSet,
                     HEVCDecoderConfigurationRecord.NALUnitType.pictureParameterSet]
        guard types.allSatisfy({ sets[$0]?.isEmpty == false }),
              sets.values.reduce(0, { $0 + $1.count }) <= HEVCDecoderConfigurationRecord.maxNALUnits,
              let spsRange = sets[HEVCDecoderConfigurationRecord.NALUnitType.sequenceParameterSet]?.first
        else {
            throw .missingParameterSets
        }
        let sps: HEVCSequenceParameterSet
        do {
            sps = try HEVCSequenceParameterSet(nalUnit: ByteBuffer(bytes: UnsafeRawBufferPointer(rebasing: bytes[spsRange])))
        } catch {
            throw .invalidCodecConfiguration(error)
        }
        // The SPS's first bytes without emulation prevention: the 2-byte NAL header, then
        // vps id / max sub-layers / temporal id nesting, then the general profile_tier_level
        // (profile space, tier, profile: 1 byte; compatibility flags: 4; constraint flags: 6;
        // level: 1).
        var rbsp: [UInt8] = []
        var zeros = 0
        for byte in bytes[spsRange] where rbsp.count < 15 {
            if zeros >= 2, byte == 3 {
                zeros = 0
                continue
            }
            zeros = byte == 0 ? zeros + 1 : 0
            rbsp.append(byte)
        }
        guard rbsp.count == 15 else { throw .missingParameterSets }
        var record = allocator.buffer(capacity: 128)
        record.writeInteger(UInt8(1))  // configurationVersion
        record.writeBytes(rbsp[3..<15])  // general profile space … level, as in the SPS
        record.writeInteger(UInt16(0xF000))  // reserved, min_spatial_segmentation_idc 0
        record.writeInteger(UInt8(0xFC))  // reserved, parallelismType 0 (unknown)
        record.writeInteger(UInt8(0xFC | (sps.chromaFormatIdc & 0x03)))
        record.writeInteger(UInt8(0xF8 | (UInt8(clamping: max(0, sps.bitDepthLuma - 8)) & 0x07)))
        record.writeInteger(UInt8(0xF8 | (UInt8(clamping: max(0, sps.bitDepthChroma - 8)) & 0x07)))
        record.writeInteger(UInt16(0))  // avgFrameRate: unspecified
        let temporalLayers = UInt8(clamping: max(1, min(7, sps.maxSubLayers)))
        let temporalIDNested = rbsp[2] & 0x01
        // constantFrameRate 0, numTemporalLayers, temporalIdNested, lengthSizeMinusOne 3.
        record.writeInteger(temporalLayers << 3 | temporalIDNested << 2 | 0x03)
        record.writeInteger(UInt8(types.count))
        for type in types {
            let ranges = sets[type] ?? []
            record.writeInteger(0x80 | type)  // array_completeness: every set of the type is here
            record.writeInteger(UInt16(ranges.count))
            for range in ranges {
                guard range.count <= HEVCDecoderConfigurationRecord.maxNALUnitLength else {
                    throw .malformedNALUnits(offset: range.lowerBound)
                }
                record.writeInteger(UInt16(range.count))
                record.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[range]))
            }
        }
        do {
            return (record, try HEVCDecoderConfigurationRecord(from: record))
        } catch {
            throw .invalidCodecConfiguration(error)
        }
    }
}
