import NIOCore

/// An MPEG-4 audio `AudioSpecificConfig` (ISO 14496-3 1.6.2.1): the body of an FLV/RTMP AAC
/// sequence header (`AF 00` + config) and of an MP4 `esds` decoder-specific info.
///
/// `12 10` is AAC-LC, 44100 Hz, stereo. HE-AAC is recognised in both signalings: explicit
/// (object type 5 or 29 first) and backward compatible (AAC-LC followed by the `0x2B7`
/// sync extension with `sbrPresentFlag` set).
public struct AudioSpecificConfig: Sendable, Equatable {
    /// Table 1.18, indexes 0...12 (13 and 14 are reserved, 15 means an explicit 24-bit rate).
    public static let samplingFrequencies = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

    /// The first signaled audio object type: 2 AAC-LC, 5 SBR (HE-AAC), 29 PS (HE-AAC v2), ...
    public var audioObjectType: Int
    /// The object type of the core coder: differs from `audioObjectType` only for explicit
    /// HE-AAC signaling, where the core follows the extension (usually 2, AAC-LC).
    public var coreAudioObjectType: Int
    /// The sampling frequency index, or nil when the frequency was sent explicitly (index 15).
    public var samplingFrequencyIndex: UInt8?
    /// The sampling frequency of the core coder in Hz.
    public var samplingFrequency: Int
    /// 0 = defined by a program config element, 1...7 and 11...14 per Table 1.19.
    public var channelConfiguration: UInt8
    /// True when SBR (HE-AAC) is signaled, explicitly or by the sync extension.
    public var sbrPresent: Bool
    /// True when parametric stereo (HE-AAC v2) is signaled.
    public var psPresent: Bool
    /// The SBR output sampling frequency in Hz, when SBR is present.
    public var extensionSamplingFrequency: Int?

    /// The decoded output sample rate: the SBR rate for HE-AAC, the core rate otherwise.
    public var sampleRate: Int {
        sbrPresent ? (extensionSamplingFrequency ?? samplingFrequency * 2) : samplingFrequency
    }

    /// Output channels per Table 1.19 (parametric stereo turns mono into stereo). 0 when
    /// `channelConfiguration` is 0: the layout is then in a program config element, which
    /// this parser does not read.
    public var channelCount: Int {
        let count: Int
        switch channelConfiguration {
        case 1...6: count = Int(channelConfiguration)
        case 7, 12, 14: count = 8
        case 11: count = 7
        case 13: count = 24
        default: count = 0
        }
        return psPresent && count == 1 ? 2 : count
    }

    /// The RFC 6381 codec string, `mp4a.40.<audioObjectType>` (`mp4a.40.2` for AAC-LC,
    /// `mp4a.40.5` for explicitly signaled HE-AAC). A backward-compatible HE-AAC stream
    /// keeps `mp4a.40.2`, which every AAC-LC decoder can play.
    public var codecString: String {
        "mp4a.40." + String(audioObjectType)
    }

    /// Parses a config from the readable bytes of `buffer` (the buffer is not consumed).
    public init(from buffer: ByteBuffer) throws(CodecConfigError) {
        var reader = BitReader(buffer: buffer)
        audioObjectType = try Self.readAudioObjectType(&reader)
        (samplingFrequencyIndex, samplingFrequency) = try Self.readSamplingFrequency(&reader)
        channelConfiguration = UInt8(try reader.readBits(4))
        if [8, 9, 10, 15].contains(channelConfiguration) {
            throw .reservedChannelConfiguration(channelConfiguration)
        }
        sbrPresent = false
        psPresent = false
        extensionSamplingFrequency = nil
        coreAudioObjectType = audioObjectType

        if audioObjectType == 5 || audioObjectType == 29 {
            sbrPresent = true
            psPresent = audioObjectType == 29
            extensionSamplingFrequency = try Self.readSamplingFrequency(&reader).frequency
            coreAudioObjectType = try Self.readAudioObjectType(&reader)
            if coreAudioObjectType == 22 {
                _ = try reader.readBits(4)  // extensionChannelConfiguration
            }
        }

        // The backward-compatible HE-AAC signaling lives after GASpecificConfig; it is only
        // looked for where the bit position is certainly known. Some encoders (ffmpeg's
        // among them) always append the extension with sbrPresentFlag 0.
        let generalAudioTypes: Set<Int> = [1, 2, 3, 4, 6, 7, 17, 19, 20, 21, 22, 23]
        guard generalAudioTypes.contains(coreAudioObjectType), channelConfiguration != 0, !sbrPresent else {
            return
        }
        var extensionReader = reader
        if let sync = try? Self.readBackwardCompatibleExtension(&extensionReader, objectType: coreAudioObjectType) {
            sbrPresent = sync.sbrPresent
            psPresent = sync.psPresent
            extensionSamplingFrequency = sync.extensionSamplingFrequency
        }
    }

    /// GetAudioObjectType(): 5 bits, or 32 + 6 more bits after the escape value 31.
    private static func readAudioObjectType(_ reader: inout BitReader) throws(CodecConfigError) -> Int {
        let objectType = Int(try reader.readBits(5))
        return objectType == 31 ? 32 + Int(try reader.readBits(6)) : objectType
    }

    private static func readSamplingFrequency(
        _ reader: inout BitReader
    ) throws(CodecConfigError) -> (index: UInt8?, frequency: Int) {
        let index = UInt8(try reader.readBits(4))
        switch index {
        case 15:
            let frequency = Int(try reader.readBits(24))
            guard frequency > 0 else {
                throw .valueOutOfRange(field: "samplingFrequency", value: frequency)
            }
            return (nil, frequency)
        case 13, 14:
            throw .reservedSamplingFrequencyIndex(index)
        default:
            return (index, samplingFrequencies[Int(index)])
        }
    }

    /// Skips GASpecificConfig (1.6.2.1, 4.4.1) and reads the `0x2B7` sync extension.
    private static func readBackwardCompatibleExtension(
        _ reader: inout BitReader,
        objectType: Int
    ) throws(CodecConfigError) -> (sbrPresent: Bool, psPresent: Bool, extensionSamplingFrequency: Int?)? {
        _ = try reader.readFlag()  // frameLengthFlag
        if try reader.readFlag() {  // dependsOnCoreCoder
            try reader.skipBits(14)  // coreCoderDelay
        }
        let extensionFlag = try reader.readFlag()
        if objectType == 6 || objectType == 20 {
            try reader.skipBits(3)  // layerNr
        }
        if extensionFlag {
            if objectType == 22 {
                try reader.skipBits(5 + 11)  // numOfSubFrame, layer_length
            }
            if [17, 19, 20, 23].contains(objectType) {
                try reader.skipBits(3)  // the three resilience flags
            }
            _ = try reader.readFlag()  // extensionFlag3
        }
        if [17, 19, 20, 21, 22, 23].contains(objectType) {
            let epConfig = try reader.readBits(2)
            guard epConfig < 2 else { return nil }  // ErrorProtectionSpecificConfig follows
        }

        guard reader.bitsRemaining >= 16, try reader.readBits(11) == 0x2B7 else {
            return nil
        }
        let extensionObjectType = try readAudioObjectType(&reader)
        guard extensionObjectType == 5, try reader.readFlag() else {
            return nil
        }
        let extensionFrequency = try readSamplingFrequency(&reader).frequency
        var psPresent = false
        if reader.bitsRemaining >= 12, try reader.readBits(11) == 0x548 {
            psPresent = try reader.readFlag()
        }
        return (true, psPresent, extensionFrequency)
    }
}
