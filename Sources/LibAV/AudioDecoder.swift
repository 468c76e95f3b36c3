import CFFmpeg
import Media
import NIOCore

/// A libavcodec decoder for the audio formats RTMP publishers send besides AAC: MP3, G.711
/// A-law and µ-law, linear PCM, Nellymoser, Speex, Flash ADPCM, and the enhanced-RTMP
/// codecs (Opus, FLAC, AC-3, E-AC-3, MP3). The transcoder re-encodes what it decodes to AAC.
///
/// Legacy FLV audio has no sequence header: every tag's first byte names the format, rate,
/// size and channels, and `AudioDecoder.Format(header:)` turns that byte into a decoder
/// configuration. The caller opens a new decoder when the format of arriving frames
/// changes (a publisher reconnecting with other settings). Enhanced-RTMP codecs that need
/// a configuration (Opus's `OpusHead`, FLAC's `STREAMINFO`) take it from their
/// SequenceStart as extradata.
///
/// Corrupt frames throw and are counted; the decoder stays usable. Owns its
/// `AVCodecContext` and packet and frees them in `deinit`; not Sendable.
public final class AudioDecoder {
    /// What a decoder is opened for: the codec and the parameters a headerless codec needs.
    public struct Format: Sendable, Equatable, CustomStringConvertible {
        public var codecID: UInt32
        public var sampleRate: Int
        public var channelCount: Int
        public var name: String

        /// The decoder configuration a coded (not sequence-header) audio tag implies, or
        /// nil for AAC (copied, not decoded) and formats that name no codec.
        public init?(header: AudioTagHeader) {
            let legacyRates = [5512, 11025, 22050, 44100]
            let rate = legacyRates[Int(header.soundRate & 3)]
            let channels = header.soundType == 1 ? 2 : 1
            switch header.codec {
            case .aac:
                return nil
            case .mp3:
                // MP3 frames carry their own rate and mode; these are only the starting point.
                let rate = header.soundFormat == .mp3At8kHz ? 8000 : (header.packetType == nil ? rate : 48000)
                self.init(AV_CODEC_ID_MP3, rate, header.packetType == nil ? channels : 2, "mp3")
                return
            case .opus:
                self.init(AV_CODEC_ID_OPUS, 48000, 2, "opus")
                return
            case .flac:
                self.init(AV_CODEC_ID_FLAC, 48000, 2, "flac")
                return
            case .ac3:
                self.init(AV_CODEC_ID_AC3, 48000, 2, "ac-3")
                return
            case .eac3:
                self.init(AV_CODEC_ID_EAC3, 48000, 2, "e-ac-3")
                return
            case nil:
                break
            }
            switch header.soundFormat {
            case .linearPCMPlatformEndian, .linearPCMLittleEndian:
                // "Platform endian" was little-endian on every platform Flash shipped for.
                if header.soundSize == 0 {
                    self.init(AV_CODEC_ID_PCM_U8, rate, channels, "pcm_u8")
                } else {
                    self.init(AV_CODEC_ID_PCM_S16LE, rate, channels, "pcm_s16le")
                }
            case .adpcm:
                self.init(AV_CODEC_ID_ADPCM_SWF, rate, channels, "adpcm_swf")
            case .nellymoser16kHzMono:
                self.init(AV_CODEC_ID_NELLYMOSER, 16000, 1, "nellymoser")
            case .nellymoser8kHzMono:
                self.init(AV_CODEC_ID_NELLYMOSER, 8000, 1, "nellymoser")
            case .nellymoser:
                self.init(AV_CODEC_ID_NELLYMOSER, rate, channels, "nellymoser")
            case .g711ALaw:
                // The FLV specification fixes G.711 at 8 kHz whatever SoundRate says.
                self.init(AV_CODEC_ID_PCM_ALAW, 8000, channels, "pcm_alaw")
            case .g711MuLaw:
                self.init(AV_CODEC_ID_PCM_MULAW, 8000, channels, "pcm_mulaw")
            case .speex:
                // Flash's Speex is always 16 kHz mono wideband.
                self.init(AV_CODEC_ID_SPEEX, 16000, 1, "speex")
            default:
                return nil
            }
        }

        private init(_ codec: AVCodecID, _ sampleRate: Int, _ channelCount: Int, _ name: String) {
            self.codecID = codec.rawValue
            self.sampleRate = sampleRate
            self.channelCount = channelCount
            self.name = name
        }

        public var description: String { "\(name) \(sampleRate) Hz \(channelCount) ch" }
    }

    public struct Statistics: Sendable, Equatable {
        public var packets = 0
        public var decodedFrames = 0
        public var corruptFrames = 0
        public init() {}
    }

    public let format: Format
    public private(set) var statistics = Statistics()
    private let codecContext: CodecContext
    private var context: UnsafeMutablePointer<AVCodecContext> { codecContext.pointer }
    private let packet: Packet
    private static let millisecondTimeBase = AVRational(num: 1, den: 1000)

    /// Opens a decoder for `format`; `configuration` is the codec configuration of an
    /// enhanced-RTMP SequenceStart (the bytes after its header), if the codec has one.
    public init(format: Format, configuration: ByteBuffer? = nil) throws(AVError) {
        guard let codec = avcodec_find_decoder(AVCodecID(rawValue: format.codecID)) else {
            throw .call(operation: "avcodec_find_decoder(\(format.name))", code: cffmpeg_averror_decoder_not_found())
        }
        let codecContext = try CodecContext(codec: codec, name: "\(format.name) decoder") { context throws(AVError) in
            context.pointee.pkt_timebase = Self.millisecondTimeBase
            context.pointee.time_base = Self.millisecondTimeBase
            context.pointee.sample_rate = Int32(format.sampleRate)
            av_channel_layout_uninit(&context.pointee.ch_layout)
            av_channel_layout_default(&context.pointee.ch_layout, Int32(format.channelCount))
            if let configuration, configuration.readableBytes > 0 {
                let (pointer, size) = try Extradata.copy(configuration)
                context.pointee.extradata = pointer
                context.pointee.extradata_size = size
            }
        }
        self.packet = try Packet()
        self.codecContext = codecContext
        self.format = format
    }


    /// Decodes one coded audio frame (the tag body after `headerLength` bytes) and returns
    /// the sample frames that became ready. Throws, after counting the frame as corrupt,
    /// when libavcodec rejects it; the decoder stays usable.
    public func decode(_ frame: MediaFrame, headerLength: Int) throws(AVError) -> [AudioFrame] {
        guard let body = frame.codecData(from: headerLength), body.readableBytes > 0 else {
            return []
        }
        let size = body.readableBytes
        let pointer = packet.pointer
        try AVError.check(av_new_packet(pointer, Int32(clamping: size)), "av_new_packet")
        defer { av_packet_unref(pointer) }
        body.withUnsafeReadableBytes { bytes in
            if let source = bytes.baseAddress, let destination = pointer.pointee.data {
                UnsafeMutableRawPointer(destination).copyMemory(from: source, byteCount: size)
            }
        }
        pointer.pointee.pts = frame.timestamp
        pointer.pointee.dts = frame.timestamp
        let code = avcodec_send_packet(context, pointer)
        guard code >= 0 || code == cffmpeg_averror_eagain() else {
            statistics.corruptFrames += 1
            throw .call(operation: "avcodec_send_packet(\(format.name))", code: code)
        }
        statistics.packets += 1
        return receiveFrames(fallbackTime: frame.timestamp)
    }

    private func receiveFrames(fallbackTime: Int64) -> [AudioFrame] {
        var frames: [AudioFrame] = []
        while true {
            guard let output = try? AudioFrame() else { return frames }
            let code = avcodec_receive_frame(context, output.pointer)
            guard code >= 0 else {
                if code != cffmpeg_averror_eagain() && code != cffmpeg_averror_eof() {
                    statistics.corruptFrames += 1
                }
                return frames
            }
            var pts = output.pointer.pointee.pts
            if pts == cffmpeg_av_nopts_value() {
                pts = output.pointer.pointee.best_effort_timestamp
            }
            output.presentationTime = pts == cffmpeg_av_nopts_value() ? fallbackTime : pts
            statistics.decodedFrames += 1
            frames.append(output)
        }
    }
}

@available(*, unavailable)
extension AudioDecoder: Sendable {}
