import Media
import NIOCore

/// A video track of a muxer, described by the stream's video sequence header: the codec,
/// the decoder configuration record (which becomes the track's extradata, `avcC` / `hvcC`)
/// and the picture size from its first SPS.
public struct VideoTrack: Sendable {
    /// `.avc` (H.264), `.hevc` (H.265) or `.av1`; VP9 has no track here.
    public var codec: VideoCodec
    /// The AVCDecoderConfigurationRecord, HEVCDecoderConfigurationRecord or
    /// AV1CodecConfigurationRecord bytes, exactly
    /// as they followed the FLV video tag header.
    public var decoderConfiguration: ByteBuffer
    /// Display width in pixels (after SPS cropping).
    public var width: Int
    /// Display height in pixels (after SPS cropping).
    public var height: Int
    /// Frames per second from the SPS VUI timing, when the encoder wrote it. Used only to
    /// guess the duration of the very first frame of a track.
    public var frameRate: Double?
    /// The RFC 6381 codec string (`avc1.64001f`, `hvc1.1.6.L93.B0`, `av01.0.04M.08`).
    public var codecString: String

    /// Builds a track from a video sequence header frame: legacy AVC (`0x17 0x00`), legacy
    /// codec id 12 HEVC, or an enhanced-RTMP `avc1` / `hvc1` / `av01` SequenceStart.
    ///
    /// Throws `.notASequenceHeader` for any other frame, `.unsupportedVideoCodec` for
    /// VP9, and `.invalidTagHeader` / `.invalidCodecConfiguration` for malformed bytes.
    public init(sequenceHeader frame: MediaFrame) throws(AVError) {
        guard frame.kind == .video else {
            throw .notASequenceHeader(.video)
        }
        let header: VideoTagHeader
        do {
            header = try frame.videoTagHeader()
        } catch {
            throw .invalidTagHeader(error)
        }
        guard header.isSequenceHeader else {
            throw .notASequenceHeader(.video)
        }
        guard let record = frame.codecData(from: header.headerLength) else {
            throw .invalidTagHeader(.truncated(needed: header.headerLength, available: frame.payload.readableBytes))
        }
        switch header.codec {
        case .avc:
            let configuration = try AVError.parsingConfiguration { () throws(CodecConfigError) in try AVCDecoderConfigurationRecord(from: record) }
            let sps = configuration.sequenceParameterSet
            self.init(codec: .avc, decoderConfiguration: record, width: sps.width, height: sps.height, frameRate: sps.frameRate, codecString: configuration.codecString)
        case .hevc:
            let configuration = try AVError.parsingConfiguration { () throws(CodecConfigError) in try HEVCDecoderConfigurationRecord(from: record) }
            let sps = configuration.sequenceParameterSet
            // avgFrameRate counts frames per 256 s; 0 means unspecified.
            let frameRate = configuration.avgFrameRate > 0 ? Double(configuration.avgFrameRate) / 256 : nil
            self.init(codec: .hevc, decoderConfiguration: record, width: sps.width, height: sps.height, frameRate: frameRate, codecString: configuration.codecString)
        case .av1:
            let configuration = try AVError.parsingConfiguration { () throws(CodecConfigError) in try AV1CodecConfigurationRecord(from: record) }
            self.init(codec: .av1, decoderConfiguration: record, width: configuration.width, height: configuration.height, frameRate: nil, codecString: configuration.codecString)
        case let other:
            throw .unsupportedVideoCodec(other)
        }
    }

    /// A track from values already known (for example a transcoder's own encoder output).
    public init(codec: VideoCodec, decoderConfiguration: ByteBuffer, width: Int, height: Int, frameRate: Double?, codecString: String) {
        self.codec = codec
        self.decoderConfiguration = decoderConfiguration
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.codecString = codecString
    }
}
