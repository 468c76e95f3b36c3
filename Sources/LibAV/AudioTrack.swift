import Media
import NIOCore

/// An audio track of a muxer, described by the stream's audio sequence header: AAC (the
/// AudioSpecificConfig: the track's extradata, `esds` in MP4, the source of the ADTS headers
/// in MPEG-TS) or Opus (the `OpusHead`: `dOps` in MP4), with sample rate and channel count.
public struct AudioTrack: Sendable {
    /// The parsed configuration, by codec.
    public enum Format: Sendable, Equatable {
        case aac(AudioSpecificConfig)
        case opus(OpusHead)
    }

    /// The configuration bytes, exactly as they followed the FLV audio tag header.
    public var decoderConfiguration: ByteBuffer
    /// The parsed configuration.
    public var format: Format
    /// The decoded output sample rate (the SBR rate for HE-AAC; 48 kHz for Opus).
    public var sampleRate: Int
    /// Output channels.
    public var channelCount: Int

    /// The FLV audio codec of the track's frames.
    public var codec: AudioCodec {
        switch format {
        case .aac: .aac
        case .opus: .opus
        }
    }

    /// The RFC 6381 codec string for HLS: `mp4a.40.2`, `opus`.
    public var codecString: String {
        switch format {
        case .aac(let configuration): configuration.codecString
        case .opus(let head): head.codecString
        }
    }

    /// Whether HLS's MPEG-TS segments can carry the track. Opus in MPEG-TS exists (ETSI TS
    /// 102 366 annex), but neither Apple's players nor hls.js read it: an HLS rendition with
    /// Opus is fMP4 only.
    public var playsInHLSTransportStream: Bool { codec == .aac }

    /// The clock of the track's sample counts: the AAC core sampling frequency, 48 kHz for Opus.
    public var clockRate: Int {
        switch format {
        case .aac(let configuration): configuration.samplingFrequency
        case .opus: OpusHead.clockRate
        }
    }

    /// Samples per frame at `clockRate`: 1024 for AAC (960-sample AAC exists only in broadcast
    /// profiles no RTMP encoder emits); for Opus, 960 (20 ms) as a guess, since each packet
    /// says its own (`OpusHead.packetSamples`).
    public var samplesPerFrame: Int {
        switch format {
        case .aac: 1024
        case .opus: 960
        }
    }

    /// Builds a track from an audio sequence header: legacy AAC `0xAF 0x00` +
    /// AudioSpecificConfig, or an Enhanced RTMP `mp4a` or `Opus` SequenceStart.
    ///
    /// Throws `.notASequenceHeader` for any other frame, `.unsupportedAudioFormat` for audio
    /// other than AAC and Opus, `.invalidTagHeader` / `.invalidCodecConfiguration` for
    /// malformed bytes, and `.unsupportedChannelConfiguration` for a PCE-defined AAC layout.
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
        guard header.codec == .aac || header.codec == .opus else {
            throw .unsupportedAudioFormat(header.soundFormat)
        }
        guard header.isSequenceHeader else {
            throw .notASequenceHeader(.audio)
        }
        guard let bytes = frame.codecData(from: header.headerLength) else {
            throw .invalidTagHeader(.truncated(needed: header.headerLength, available: frame.payload.readableBytes))
        }
        if header.codec == .opus {
            let head = try AVError.parsingConfiguration { () throws(CodecConfigError) in try OpusHead(from: bytes) }
            self.init(opusHead: bytes, head: head)
            return
        }
        let configuration = try AVError.parsingConfiguration { () throws(CodecConfigError) in try AudioSpecificConfig(from: bytes) }
        try self.init(audioSpecificConfig: bytes, configuration: configuration)
    }

    /// An AAC track from a parsed AudioSpecificConfig and its bytes.
    public init(audioSpecificConfig: ByteBuffer, configuration: AudioSpecificConfig) throws(AVError) {
        guard configuration.channelCount > 0 else {
            throw .unsupportedChannelConfiguration(configuration.channelConfiguration)
        }
        self.decoderConfiguration = audioSpecificConfig
        self.format = .aac(configuration)
        self.sampleRate = configuration.sampleRate
        self.channelCount = configuration.channelCount
    }

    /// An Opus track from a parsed `OpusHead` and its bytes.
    public init(opusHead bytes: ByteBuffer, head: OpusHead) {
        self.decoderConfiguration = bytes
        self.format = .opus(head)
        self.sampleRate = OpusHead.clockRate
        self.channelCount = head.channelCount
    }
}
