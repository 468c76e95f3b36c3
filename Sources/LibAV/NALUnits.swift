import Media
import NIOCore

/// Conversions between the two ways H.264/H.265 NAL units are framed:
///
/// - **Annex B** (ITU-T H.264 Annex B): each NAL unit follows a start code `00 00 01` or
///   `00 00 00 01`. libx264 writes its packets and its global header this way.
/// - **Length-prefixed** (ISO 14496-15, "AVCC"): each NAL unit follows its length in
///   `lengthSize` big-endian bytes (4 in practice). FLV/RTMP, MP4 and decoders opened with
///   an avcC/hvcC extradata use this form.
///
/// Everything is bounds-checked; nothing here traps on malformed input.
public enum NALUnits {
    /// The NAL units of an Annex B byte string, without their start codes, as ranges into
    /// `bytes`. Bytes before the first start code are ignored (an encoder emits none);
    /// trailing zero bytes of a NAL unit (`trailing_zero_8bits`) are not part of it.
    /// Throws `.malformedNALUnits` when there is no start code at all.
    public static func annexBRanges(_ bytes: UnsafeRawBufferPointer) throws(AVError) -> [Range<Int>] {
        var starts: [(codeStart: Int, payloadStart: Int)] = []
        var index = 0
        let count = bytes.count
        while index + 2 < count {
            if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1 {
                // A 4-byte start code is a zero byte before a 3-byte one.
                let codeStart = index > 0 && bytes[index - 1] == 0 ? index - 1 : index
                starts.append((codeStart, index + 3))
                index += 3
            } else {
                index += 1
            }
        }
        guard !starts.isEmpty else {
            throw .malformedNALUnits(offset: 0)
        }
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(starts.count)
        for (position, start) in starts.enumerated() {
            var end = position + 1 < starts.count ? starts[position + 1].codeStart : count
            while end > start.payloadStart, bytes[end - 1] == 0 {
                end -= 1
            }
            if end > start.payloadStart {
                ranges.append(start.payloadStart..<end)
            }
        }
        return ranges
    }

    /// Writes the Annex B NAL units of `bytes` into `buffer` with 4-byte length prefixes.
    /// Returns the NAL unit types written (the low 5 bits of each header byte, H.264).
    @discardableResult
    public static func writeLengthPrefixed(annexB bytes: UnsafeRawBufferPointer, into buffer: inout ByteBuffer) throws(AVError) -> [UInt8] {
        let ranges = try annexBRanges(bytes)
        var types: [UInt8] = []
        types.reserveCapacity(ranges.count)
        for range in ranges {
            guard range.count <= Int(UInt32.max) else {
                throw .malformedNALUnits(offset: range.lowerBound)
            }
            buffer.writeInteger(UInt32(range.count))
            buffer.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[range]))
            types.append(bytes[range.lowerBound] & 0x1F)
        }
        return types
    }

    /// Checks that the readable bytes of `payload` are a whole number of length-prefixed
    /// NAL units (each at least one byte) with `lengthSize`-byte prefixes.
    /// Throws `.malformedNALUnits` with the offset of the first bad prefix otherwise.
    public static func validateLengthPrefixed(_ payload: ByteBuffer, lengthSize: Int) throws(AVError) {
        guard [1, 2, 4].contains(lengthSize) else {
            throw .malformedNALUnits(offset: 0)
        }
        var offset = 0
        let total = payload.readableBytes
        guard total > 0 else {
            throw .malformedNALUnits(offset: 0)
        }
        while offset < total {
            guard offset + lengthSize <= total else {
                throw .malformedNALUnits(offset: offset)
            }
            let base = payload.readerIndex + offset
            let length: Int
            switch lengthSize {
            case 1: length = Int(payload.getInteger(at: base, as: UInt8.self) ?? 0)
            case 2: length = Int(payload.getInteger(at: base, as: UInt16.self) ?? 0)
            default: length = Int(payload.getInteger(at: base, as: UInt32.self) ?? 0)
            }
            guard length > 0, length <= total - offset - lengthSize else {
                throw .malformedNALUnits(offset: offset)
            }
            offset += lengthSize + length
        }
    }

    /// An AVCDecoderConfigurationRecord (ISO 14496-15 5.3.3.1) for the SPS and PPS NAL
    /// units (header byte included) found in Annex B bytes, such as libx264's global
    /// header, with 4-byte NAL unit lengths. For High profiles and above the record ends
    /// with the chroma format / bit depth extension, read from the parsed SPS, as FFmpeg's
    /// `ff_isom_write_avcc` writes it.
    ///
    /// The result is parsed back with Media's `AVCDecoderConfigurationRecord` before it is
    /// returned, so a record this returns is one every Estuary consumer accepts.
    public static func avcDecoderConfigurationRecord(
        fromAnnexB bytes: UnsafeRawBufferPointer,
        allocator: ByteBufferAllocator = ByteBufferAllocator()
    ) throws(AVError) -> (bytes: ByteBuffer, record: AVCDecoderConfigurationRecord) {
        var sequenceParameterSets: [Range<Int>] = []
        var pictureParameterSets: [Range<Int>] = []
        for range in try annexBRanges(bytes) {
            switch bytes[range.lowerBound] & 0x1F {
            case 7: sequenceParameterSets.append(range)
            case 8: pictureParameterSets.append(range)
            default: continue
            }
        }
        guard let firstSPS = sequenceParameterSets.first, firstSPS.count >= 4, !pictureParameterSets.isEmpty,
              sequenceParameterSets.count <= AVCDecoderConfigurationRecord.maxSequenceParameterSets,
              pictureParameterSets.count <= AVCDecoderConfigurationRecord.maxPictureParameterSets
        else {
            throw .missingParameterSets
        }
        var record = allocator.buffer(capacity: 64)
        record.writeInteger(UInt8(1))  // configurationVersion
        record.writeInteger(bytes[firstSPS.lowerBound + 1])  // AVCProfileIndication
        record.writeInteger(bytes[firstSPS.lowerBound + 2])  // profile_compatibility
        record.writeInteger(bytes[firstSPS.lowerBound + 3])  // AVCLevelIndication
        record.writeInteger(UInt8(0xFC | 3))  // reserved 6 bits, lengthSizeMinusOne = 3
        record.writeInteger(UInt8(0xE0 | UInt8(sequenceParameterSets.count)))
        for range in sequenceParameterSets {
            try writeParameterSet(range, of: bytes, into: &record)
        }
        record.writeInteger(UInt8(pictureParameterSets.count))
        for range in pictureParameterSets {
            try writeParameterSet(range, of: bytes, into: &record)
        }
        var parsed: AVCDecoderConfigurationRecord
        do {
            parsed = try AVCDecoderConfigurationRecord(from: record)
        } catch {
            throw .invalidCodecConfiguration(error)
        }
        // Profiles other than Baseline, Main and Extended carry the extension.
        if ![66, 77, 88].contains(parsed.profileIndication) {
            let sps = parsed.sequenceParameterSet
            record.writeInteger(UInt8(0xFC | (sps.chromaFormatIdc & 0x03)))
            record.writeInteger(UInt8(0xF8 | (UInt8(clamping: max(0, sps.bitDepthLuma - 8)) & 0x07)))
            record.writeInteger(UInt8(0xF8 | (UInt8(clamping: max(0, sps.bitDepthChroma - 8)) & 0x07)))
            record.writeInteger(UInt8(0))  // numOfSequenceParameterSetExt
            do {
                parsed = try AVCDecoderConfigurationRecord(from: record)
            } catch {
                throw .invalidCodecConfiguration(error)
            }
        }
        return (record, parsed)
    }

    private static func writeParameterSet(_ range: Range<Int>, of bytes: UnsafeRawBufferPointer, into record: inout ByteBuffer) throws(AVError) {
        guard range.count <= AVCDecoderConfigurationRecord.maxParameterSetLength else {
            throw .malformedNALUnits(offset: range.lowerBound)
        }
        record.writeInteger(UInt16(range.count))
        record.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[range]))
    }
}
