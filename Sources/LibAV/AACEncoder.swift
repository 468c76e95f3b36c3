import CFFmpeg
import Media
import NIOCore

/// An AAC-LC encoder (libavcodec's native `aac`) that turns resampled planar-float audio
/// into Estuary's FLV-form AAC frames: the sequence header (`0xAF 0x00` + the
/// AudioSpecificConfig of the encoder's global header) and raw frames (`0xAF 0x01` + data).
///
/// **Framing.** AAC codes 1024 samples per frame while decoders hand out frames of other
/// sizes (1152 for MP3, 160 or 320 for G.711 at 20/40 ms), so input collects in an
/// `AVAudioFifo` and leaves it in 1024-sample frames.
///
/// **Timestamps.** Output time is counted in samples from an anchor, the input time of the
/// first sample, so it is exact and monotonic however the input was framed. When the
/// input's time disagrees with the count by more than `resynchroniseAfter` milliseconds
/// (a gap in the audio, a publisher that reconnected) the buffered remainder is dropped
/// and the count re-anchors on the input. The encoder's priming frame (1024 samples
/// before the first input sample) would get a time before the anchor; as FLV has no edit
/// lists it is dropped when that time is negative.
///
/// Owns its `AVCodecContext`, FIFO and packet and frees them in `deinit`; not Sendable.
public final class AACEncoder {
    public struct Settings: Sendable, Equatable {
        public var sampleRate: Int
        public var channelCount: Int
        public var bitRate: Int
        public var resynchroniseAfter: Int64 = 100

        public init(sampleRate: Int, channelCount: Int, bitRate: Int) {
            self.sampleRate = sampleRate
            self.channelCount = channelCount
            self.bitRate = bitRate
        }
    }

    public struct Statistics: Sendable, Equatable {
        public var framesEncoded = 0
        public var resynchronisations = 0
        public var bytesOut = 0
        public init() {}
    }

    public let settings: Settings
    /// The AudioSpecificConfig of the stream.
    public let audioSpecificConfig: ByteBuffer
    public private(set) var statistics = Statistics()

    private let codecContext: CodecContext
    private var context: UnsafeMutablePointer<AVCodecContext> { codecContext.pointer }
    private let fifo: OpaquePointer
    private let packet: Packet
    private let frameSize: Int
    private let allocator: ByteBufferAllocator
    /// Time (in samples at the output rate) of the first sample in the FIFO; nil before
    /// the first input.
    private var fifoStart: Int64?
    private var lastOutputTime: Int64?

    /// Opens the encoder. Throws `.call` when libavcodec has no AAC encoder or rejects the
    /// settings.
    public init(settings: Settings, allocator: ByteBufferAllocator = ByteBufferAllocator()) throws(AVError) {
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_AAC) else {
            throw .call(operation: "avcodec_find_encoder(aac)", code: cffmpeg_averror_encoder_not_found())
        }
        let codecContext = try CodecContext(codec: codec, name: "aac") { context throws(AVError) in
            context.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
            context.pointee.sample_rate = Int32(settings.sampleRate)
            av_channel_layout_uninit(&context.pointee.ch_layout)
            av_channel_layout_default(&context.pointee.ch_layout, Int32(settings.channelCount))
            context.pointee.bit_rate = Int64(settings.bitRate)
            context.pointee.time_base = AVRational(num: 1, den: Int32(settings.sampleRate))
            context.pointee.profile = FF_PROFILE_AAC_LOW
            // The AudioSpecificConfig in extradata, not ADTS headers on every frame.
            context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER
        }
        let context = codecContext.pointer
        guard let extradata = context.pointee.extradata, context.pointee.extradata_size >= 2 else {
            throw .call(operation: "aac global header", code: cffmpeg_averror_einval())
        }
        guard let fifo = av_audio_fifo_alloc(AV_SAMPLE_FMT_FLTP, Int32(settings.channelCount), max(1, context.pointee.frame_size)) else {
            throw .call(operation: "av_audio_fifo_alloc", code: cffmpeg_averror_enomem())
        }
        self.audioSpecificConfig = ByteBuffer(bytes: UnsafeRawBufferPointer(start: extradata, count: Int(context.pointee.extradata_size)))
        self.frameSize = Int(max(1, context.pointee.frame_size))
        self.fifo = fifo
        do {
            self.packet = try Packet()
        } catch {
            av_audio_fifo_free(fifo)
            throw error
        }
        self.codecContext = codecContext
        self.settings = settings
        self.allocator = allocator
    }

    deinit {
        av_audio_fifo_free(fifo)
    }

    /// The FLV AAC sequence header at `timestamp`.
    public func sequenceHeader(timestamp: Int64) -> MediaFrame {
        FLVPayload.aacSequenceHeader(audioSpecificConfig.readableBytesView, timestamp: timestamp, allocator: allocator)
    }

    /// Adds resampled audio (planar float at the encoder's rate and channels) and returns
    /// the AAC frames that are complete.
    public func encode(_ input: AudioFrame) throws(AVError) -> [MediaFrame] {
        let frame = input.pointer
        guard frame.pointee.format == AV_SAMPLE_FMT_FLTP.rawValue,
              Int(frame.pointee.sample_rate) == settings.sampleRate,
              Int(frame.pointee.ch_layout.nb_channels) == settings.channelCount
        else {
            throw .call(operation: "AACEncoder.encode(format \(frame.pointee.format), \(frame.pointee.sample_rate) Hz)", code: cffmpeg_averror_einval())
        }
        guard frame.pointee.nb_samples > 0 else { return [] }
        let rate = Int64(settings.sampleRate)
        let inputTime = input.presentationTime * rate / 1000
        let buffered = Int64(av_audio_fifo_size(fifo))
        if let fifoStart {
            let expected = fifoStart + buffered
            if abs(inputTime - expected) > settings.resynchroniseAfter * rate / 1000 {
                // The input jumped: what is buffered belongs to the old timeline.
                av_audio_fifo_reset(fifo)
                self.fifoStart = max(inputTime, (lastOutputTime ?? Int64.min) + Int64(frameSize))
                statistics.resynchronisations += 1
            }
        } else {
            fifoStart = inputTime
        }
        let written = frame.pointee.extended_data.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: Int(settings.channelCount)) { planes in
            av_audio_fifo_write(fifo, planes, frame.pointee.nb_samples)
        }
        try AVError.check(written, "av_audio_fifo_write")
        var output: [MediaFrame] = []
        while Int(av_audio_fifo_size(fifo)) >= frameSize {
            output += try encodeOneFrame(sampleCount: frameSize)
        }
        return output
    }

    /// Encodes what is buffered (padded by the encoder) and drains it. The encoder cannot
    /// be used afterwards.
    public func flush() throws(AVError) -> [MediaFrame] {
        var output: [MediaFrame] = []
        let remaining = Int(av_audio_fifo_size(fifo))
        if remaining > 0 {
            output += try encodeOneFrame(sampleCount: remaining)
        }
        let code = avcodec_send_frame(context, nil)
        guard code >= 0 || code == cffmpeg_averror_eof() else {
            throw .call(operation: "avcodec_send_frame(aac flush)", code: code)
        }
        output += try receivePackets()
        return output
    }

    private func encodeOneFrame(sampleCount: Int) throws(AVError) -> [MediaFrame] {
        let frame = try AudioFrame()
        let pointer = frame.pointer
        pointer.pointee.nb_samples = Int32(sampleCount)
        pointer.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
        pointer.pointee.sample_rate = Int32(settings.sampleRate)
        av_channel_layout_default(&pointer.pointee.ch_layout, Int32(settings.channelCount))
        try AVError.check(av_frame_get_buffer(pointer, 0), "av_frame_get_buffer(aac)")
        let read = pointer.pointee.extended_data.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: Int(settings.channelCount)) { planes in
            av_audio_fifo_read(fifo, planes, Int32(sampleCount))
        }
        try AVError.check(read, "av_audio_fifo_read")
        let start = fifoStart ?? 0
        pointer.pointee.pts = start
        fifoStart = start + Int64(read)
        try AVError.check(avcodec_send_frame(context, pointer), "avcodec_send_frame(aac)")
        statistics.framesEncoded += 1
        return try receivePackets()
    }

    private func receivePackets() throws(AVError) -> [MediaFrame] {
        try codecContext.receivePackets(into: packet, operation: "avcodec_receive_packet(aac)") { packet in
            mediaFrame(from: packet)
        }
    }

    /// `0xAF 0x01` + the raw AAC frame, at its presentation time; nil for the priming
    /// frame before the stream's start and anything not after the last frame.
    private func mediaFrame(from packet: UnsafeMutablePointer<AVPacket>) -> MediaFrame? {
        let pts = packet.pointee.pts
        guard pts >= 0, let data = packet.pointee.data, packet.pointee.size > 0 else { return nil }
        if let lastOutputTime, pts <= lastOutputTime { return nil }
        lastOutputTime = pts
        let timestamp = pts * 1000 / Int64(settings.sampleRate)
        let frame = FLVPayload.aacFrame(UnsafeRawBufferPointer(start: data, count: Int(packet.pointee.size)), timestamp: timestamp, allocator: allocator)
        statistics.bytesOut += frame.payload.readableBytes
        return frame
    }
}

@available(*, unavailable)
extension AACEncoder: Sendable {}
