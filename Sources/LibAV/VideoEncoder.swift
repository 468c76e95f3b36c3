import CFFmpeg
import Media
import NIOCore

/// An H.264 encoder (libx264 through libavcodec) for one rendition of a live stream,
/// producing Estuary's FLV-form `MediaFrame`s.
///
/// Settings are the low-latency live defaults: preset `veryfast`, tune `zerolatency`,
/// no B-frames (so DTS = PTS and a picture leaves the encoder as soon as it goes in),
/// CBR-like rate control with VBV (`maxrate` = bitrate, `bufsize` ≈ one second of it),
/// and a millisecond time base, so the stream's timestamps pass through unchanged.
///
/// **Keyframes follow the source.** x264's own GOP logic is switched off (scene-cut
/// detection disabled, a keyframe interval of `maximumKeyframeInterval` frames, by
/// default effectively infinite); a picture whose source frame was a keyframe is sent as
/// `AV_PICTURE_TYPE_I` with the `forced-idr` option, which makes it an IDR. Every
/// rendition encoded from the same source therefore has its keyframes at the source's
/// keyframe PTS, and players switch between renditions at GOP boundaries.
///
/// **Output.** The AVC sequence header (`0x17 0x00 0 0 0` + AVCDecoderConfigurationRecord
/// built from the SPS/PPS of x264's global header, which libavcodec hands over in Annex B
/// form) and coded frames (`0x17`/`0x27 0x01` + composition time + NAL units with 4-byte
/// lengths, converted from x264's Annex B output).
///
/// **Frame-rate cap.** With `maximumFrameRate` set, pictures closer than 90% of the
/// capped frame interval to the last encoded one are dropped (the 10% absorbs the
/// millisecond rounding of FLV timestamps); source keyframes are never dropped.
///
/// Owns its `AVCodecContext` and packet and frees them in `deinit`; not Sendable, stays on
/// one worker thread.
public final class VideoEncoder {
    public struct Settings: Sendable, Equatable {
        public var width: Int
        public var height: Int
        /// Target bit rate in bits per second; also the VBV maximum rate.
        public var bitRate: Int
        /// The VBV buffer in bits; nil means one second of `bitRate`.
        public var bufferSize: Int?
        /// The expected frame rate of the input (after capping): x264's rate control
        /// budgets bits per frame from it.
        public var frameRate: Double
        /// Pictures beyond this rate are dropped; nil encodes every picture.
        public var maximumFrameRate: Double?
        /// A keyframe is forced after this many frames without one; nil leaves keyframes
        /// entirely to the source (x264's "infinite" interval).
        public var maximumKeyframeInterval: Int?
        public var preset: String = "veryfast"
        public var tune: String = "zerolatency"
        /// libx264 threads; 0 lets x264 choose (sliced threads under `zerolatency`).
        public var threadCount: Int = 0

        public init(width: Int, height: Int, bitRate: Int, frameRate: Double, maximumFrameRate: Double? = nil) {
            self.width = width
            self.height = height
            self.bitRate = bitRate
            self.frameRate = frameRate
            self.maximumFrameRate = maximumFrameRate
        }
    }

    public struct Statistics: Sendable, Equatable {
        public var framesEncoded = 0
        public var keyframes = 0
        /// Pictures dropped by the frame-rate cap.
        public var droppedByFrameRateCap = 0
        /// Pictures dropped because their PTS did not increase.
        public var droppedOutOfOrder = 0
        public var bytesOut = 0

        public init() {}
    }

    /// x264's "infinite" keyframe interval (`X264_KEYINT_MAX_INFINITE`).
    static let infiniteKeyframeInterval: Int32 = 1 << 30
    private static let millisecondTimeBase = AVRational(num: 1, den: 1000)

    public let settings: Settings
    /// The AVCDecoderConfigurationRecord bytes of the stream (avcC).
    public let decoderConfiguration: ByteBuffer
    /// The parsed record (profile, level, SPS facts such as the coded size).
    public let configurationRecord: AVCDecoderConfigurationRecord
    public private(set) var statistics = Statistics()

    private let codecContext: CodecContext
    private var context: UnsafeMutablePointer<AVCodecContext> { codecContext.pointer }
    private let packet: Packet
    private let allocator: ByteBufferAllocator
    private var lastPresentationTime: Int64?
    private var lastEncodedTime: Int64?
    /// The bit rate in force (`settings.bitRate` until `limitBitRate(to:)`).
    public private(set) var bitRate: Int

    /// Lowers the target bit rate (and the VBV rate and buffer with it) from the next picture
    /// on: libavcodec's libx264 wrapper reconfigures x264 when `bit_rate` changes between
    /// frames. A value at or above the current rate changes nothing.
    public func limitBitRate(to limit: Int) {
        guard limit > 0, limit < bitRate else { return }
        let ratio = Double(settings.bufferSize ?? settings.bitRate) / Double(settings.bitRate)
        bitRate = limit
        context.pointee.bit_rate = Int64(limit)
        context.pointee.rc_max_rate = Int64(limit)
        context.pointee.rc_buffer_size = Int32(clamping: Int(Double(limit) * ratio))
    }

    /// Opens libx264 with `settings`. Throws `.invalidPicture` for odd or non-positive
    /// sizes, `.call` when libx264 is missing or rejects an option, and
    /// `.missingParameterSets` / `.invalidCodecConfiguration` if its global header is not
    /// a usable SPS + PPS.
    public init(settings: Settings, allocator: ByteBufferAllocator = ByteBufferAllocator()) throws(AVError) {
        self.bitRate = settings.bitRate
        guard settings.width > 0, settings.height > 0, settings.width % 2 == 0, settings.height % 2 == 0,
              settings.width <= 16384, settings.height <= 16384
        else {
            throw .invalidPicture(width: settings.width, height: settings.height)
        }
        guard settings.bitRate > 0, settings.frameRate > 0, settings.frameRate.isFinite else {
            throw .call(operation: "VideoEncoder(bitRate: \(settings.bitRate), frameRate: \(settings.frameRate))", code: cffmpeg_averror_einval())
        }
        guard let codec = avcodec_find_encoder_by_name("libx264") else {
            throw .call(operation: "avcodec_find_encoder_by_name(libx264)", code: cffmpeg_averror_encoder_not_found())
        }
        let codecContext = try CodecContext(codec: codec, name: "libx264") { context throws(AVError) in
            let frameRate = min(settings.frameRate, settings.maximumFrameRate ?? .infinity)
            context.pointee.width = Int32(settings.width)
            context.pointee.height = Int32(settings.height)
            context.pointee.pix_fmt = AV_PIX_FMT_YUV420P
            context.pointee.time_base = Self.millisecondTimeBase
            context.pointee.framerate = av_d2q(frameRate, 1_000_000)
            context.pointee.bit_rate = Int64(settings.bitRate)
            context.pointee.rc_max_rate = Int64(settings.bitRate)
            context.pointee.rc_buffer_size = Int32(clamping: settings.bufferSize ?? settings.bitRate)
            context.pointee.max_b_frames = 0
            context.pointee.gop_size = settings.maximumKeyframeInterval.map { Int32(clamping: max(1, $0)) } ?? Self.infiniteKeyframeInterval
            context.pointee.thread_count = Int32(clamping: max(0, settings.threadCount))
            // SPS/PPS once, in extradata, not repeated before every IDR: FLV carries them in
            // the sequence header.
            context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER
            let options: [(String, String)] = [
                ("preset", settings.preset),
                ("tune", settings.tune),
                ("forced-idr", "1"),
                // No scene-cut keyframes: keyframes come from the source only.
                ("x264-params", "scenecut=0"),
            ]
            for (name, value) in options {
                try AVError.check(av_opt_set(context.pointee.priv_data, name, value, 0), "av_opt_set(\(name)=\(value))")
            }
        }
        let context = codecContext.pointer

        guard let extradata = context.pointee.extradata, context.pointee.extradata_size > 0 else {
            throw .missingParameterSets
        }
        let header = UnsafeRawBufferPointer(start: extradata, count: Int(context.pointee.extradata_size))
        if header.first == 1 {
            // Already an avcC (not what libx264 does, but other builds might).
            let bytes = ByteBuffer(bytes: header)
            do {
                self.configurationRecord = try AVCDecoderConfigurationRecord(from: bytes)
            } catch {
                throw .invalidCodecConfiguration(error)
            }
            self.decoderConfiguration = bytes
        } else {
            (self.decoderConfiguration, self.configurationRecord) = try NALUnits.avcDecoderConfigurationRecord(fromAnnexB: header, allocator: allocator)
        }
        self.packet = try Packet()
        self.codecContext = codecContext
        self.settings = settings
        self.allocator = allocator
    }


    /// The FLV AVC sequence header frame (`0x17 0x00 0 0 0` + record) at `timestamp`.
    public func sequenceHeader(timestamp: Int64) -> MediaFrame {
        FLVPayload.avcSequenceHeader(decoderConfiguration, timestamp: timestamp, allocator: allocator)
    }

    /// Decides whether a picture at `presentationTime` will be encoded, before the caller
    /// spends time scaling it: false (and the drop counted) when the frame-rate cap or a
    /// non-increasing PTS rules it out. `encode` applies the same rule to what it is given.
    public func admit(presentationTime: Int64, isSourceKeyframe: Bool) -> Bool {
        switch dropReason(presentationTime: presentationTime, isSourceKeyframe: isSourceKeyframe) {
        case .outOfOrder:
            statistics.droppedOutOfOrder += 1
            return false
        case .frameRateCap:
            statistics.droppedByFrameRateCap += 1
            return false
        case nil:
            return true
        }
    }

    private enum DropReason {
        case outOfOrder
        case frameRateCap
    }

    private func dropReason(presentationTime: Int64, isSourceKeyframe: Bool) -> DropReason? {
        if let lastPresentationTime, presentationTime <= lastPresentationTime {
            return .outOfOrder
        }
        if !isSourceKeyframe, let cap = settings.maximumFrameRate, cap > 0, let lastEncodedTime {
            let minimumInterval = 0.9 * 1000 / cap
            if Double(presentationTime - lastEncodedTime) < minimumInterval {
                return .frameRateCap
            }
        }
        return nil
    }

    /// Encodes one picture (already `width`×`height` yuv420p) and returns the coded frames
    /// that came out (with x264's zerolatency settings, exactly one per picture).
    /// A picture dropped by the frame-rate cap or for a non-increasing PTS returns none
    /// and is counted.
    public func encode(_ frame: VideoFrame) throws(AVError) -> [MediaFrame] {
        guard admit(presentationTime: frame.presentationTime, isSourceKeyframe: frame.isSourceKeyframe) else {
            return []
        }
        let picture = frame.pointer
        guard Int(picture.pointee.width) == settings.width, Int(picture.pointee.height) == settings.height,
              picture.pointee.format == AV_PIX_FMT_YUV420P.rawValue
        else {
            throw .invalidPicture(width: Int(picture.pointee.width), height: Int(picture.pointee.height))
        }
        picture.pointee.pts = frame.presentationTime
        // Whatever type the source picture had, only source keyframes are forced.
        picture.pointee.pict_type = frame.isSourceKeyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        try AVError.check(avcodec_send_frame(context, picture), "avcodec_send_frame")
        lastPresentationTime = frame.presentationTime
        lastEncodedTime = frame.presentationTime
        statistics.framesEncoded += 1
        return try receivePackets()
    }

    /// Drains the encoder at the end of the stream. The encoder cannot be used afterwards.
    public func flush() throws(AVError) -> [MediaFrame] {
        let code = avcodec_send_frame(context, nil)
        guard code >= 0 || code == cffmpeg_averror_eof() else {
            throw .call(operation: "avcodec_send_frame(flush)", code: code)
        }
        return try receivePackets()
    }

    private func receivePackets() throws(AVError) -> [MediaFrame] {
        try codecContext.receivePackets(into: packet, operation: "avcodec_receive_packet") { packet throws(AVError) in
            try mediaFrame(from: packet)
        }
    }

    /// `0x17`/`0x27 0x01` + SI24 composition time + length-prefixed NAL units.
    private func mediaFrame(from packet: UnsafeMutablePointer<AVPacket>) throws(AVError) -> MediaFrame {
        let isKeyframe = packet.pointee.flags & AV_PKT_FLAG_KEY != 0
        let pts = packet.pointee.pts
        let dts = packet.pointee.dts == cffmpeg_av_nopts_value() ? pts : packet.pointee.dts
        let size = Int(packet.pointee.size)
        let start = FLVPayload.avcCodedFrameStart(isKeyframe: isKeyframe, compositionTime: pts - dts, bodyCapacity: size + 16, allocator: allocator)
        var payload = start.payload
        let header = start.header
        guard let data = packet.pointee.data, size > 0 else {
            throw .malformedNALUnits(offset: 0)
        }
        let bytes = UnsafeRawBufferPointer(start: data, count: size)
        if size >= 4, bytes[0] == 0, bytes[1] == 0, bytes[2] == 1 || (bytes[2] == 0 && bytes[3] == 1) {
            try NALUnits.writeLengthPrefixed(annexB: bytes, into: &payload)
        } else {
            // Already length-prefixed (4-byte lengths, as the global header would say).
            let body = ByteBuffer(bytes: bytes)
            try NALUnits.validateLengthPrefixed(body, lengthSize: 4)
            payload.writeImmutableBuffer(body)
        }
        if isKeyframe {
            statistics.keyframes += 1
        }
        statistics.bytesOut += payload.readableBytes
        return MediaFrame(timestamp: dts, video: header, payload: payload)
    }
}

@available(*, unavailable)
extension VideoEncoder: Sendable {}
