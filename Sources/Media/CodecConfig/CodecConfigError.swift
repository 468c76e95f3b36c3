/// Why a codec configuration (AVC/HEVC decoder configuration record, parameter set,
/// AudioSpecificConfig) could not be parsed. Associated values carry the offending values.
public enum CodecConfigError: Error, Equatable, Sendable {
    /// The record ends before a field: `needed` more bytes were required, `available` remained.
    case truncated(needed: Int, available: Int)
    /// A bit-level read ran past the end of a parameter set or AudioSpecificConfig.
    case bitstreamExhausted(bitOffset: Int, requested: Int)
    /// An exp-Golomb code has more than 31 leading zero bits, so its value exceeds 32 bits.
    case expGolombOverflow(bitOffset: Int)
    /// `configurationVersion` is not 1.
    case unsupportedConfigurationVersion(UInt8)
    /// `lengthSizeMinusOne + 1` is not 1, 2 or 4 (3 is reserved by ISO 14496-15).
    case invalidNALUnitLengthSize(Int)
    /// More parameter sets than the limit this parser accepts.
    case tooManyParameterSets(count: Int, limit: Int)
    /// A parameter set longer than the limit this parser accepts.
    case parameterSetTooLarge(length: Int, limit: Int)
    /// The record carries no sequence parameter set, so the stream cannot be described.
    case missingSequenceParameterSet
    /// A NAL unit in the record has a type that does not belong where it was found.
    case unexpectedNALUnitType(expected: UInt8, actual: UInt8)
    /// A syntax element is outside the range the specification allows.
    case valueOutOfRange(field: String, value: Int)
    /// The decoded picture size is empty or negative (for example cropping larger than the picture).
    case invalidDimensions(width: Int, height: Int)
    /// `samplingFrequencyIndex` 13 or 14, which ISO 14496-3 reserves.
    case reservedSamplingFrequencyIndex(UInt8)
    /// `channelConfiguration` 8, 9, 10 or 15, which ISO 14496-3 reserves.
    case reservedChannelConfiguration(UInt8)
}
