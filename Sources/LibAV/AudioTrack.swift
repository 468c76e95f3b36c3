import Media
import NIOCore

/// An audio track of a muxer, described by the stream's AAC sequence header: the
/// AudioSpecificConfig (the track's extradata, `esds` in MP4, the source of the ADTS
/// headers in MPEG-TS), sample rate and channel count.
public struct AudioTrack: Sendable {
    /// The AudioSpecificConfig bytes, exactly as they followed the FLV audio tag header.
    public var audioSpecificConfig: ByteBuffer
    /// The parsed configuration.
    public var configuration: AudioSpecificConfig
    /// The decoded output sample rate (the SBR rate for HE-AAC).
    public var sampleRate: Int
    /// Output channels.
    public var channelCount: Int
    /// Samples per AAC frame at the core sampling frequency: 1024 (960-sample AAC exists
    /// only in broadcast profiles no RTMP encoder emits).
    public var samplesPerFrame: Int { 1024 }

    /// Builds a track from an AAC sequence header: legacy `0xAF 0x00` + AudioSpecificConfig
    /// or an enhanced-RTMP `mp4a` SequenceStart.
    ///
    /// Throws `.notASequenceHeader` for any other frame, `.unsupportedAudioFormat` for
    /// non-AAC audio, `.invalidTagHeader` / `.invalidCodecConfiguration` for malformed bytes,
    /// and `.unsupportedChannelConfiguration` for a PCE-defined channel layout.
    public init(sequenceHeader frame: MediaFrame) throws(AVError) {
        guard frame.kind == .audio else {
            throw .notASequenceHeader(.audio)
        }
        let header: AudioTagHeader
        do {
            header = try frame.audioTagHeader()
        } catch {
            throw .invalidTagHeader(error)
        }
        guard header.codec == .aac else {
            throw .unsupportedAudioFormat(header.soundFormat)
        }
        guard header.isSequenceHeader else {
            throw .notASequenceHeader(.audio)
        }
        guard let bytes = frame.codecData(from: header.headerLength) else {
            throw .invalidTagHeader(.truncated(needed: header.headerLength, available: frame.payload.readableBytes))
        }
        let configuration = try AVError.parsingConfiguration { () throws(CodecConfigError) in try AudioSpecificConfig(from: bytes) }
        try self.init(audioSpecificConfig: bytes, configuration: configuration)
    }

    /// A track from a parsed AudioSpecificConfig and its bytes.
    public init(audioSpecificConfig: ByteBuffer, configuration: AudioSpecificConfig) throws(AVError) {
        guard configuration.channelCount > 0 else {
            throw .unsupportedChannelConfiguration(configuration.channelConfiguration)
        }
        self.audioSpecificConfig = audioSpecificConfig
        self.configuration = configuration
        self.sampleRate = configuration.sampleRate
        self.channelCount = configuration.channelCount
    }
}
