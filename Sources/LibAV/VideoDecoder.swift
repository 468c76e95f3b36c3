import CFFmpeg
import Media
import NIOCore

/// A libavcodec H.264 / H.265 / AV1 decoder fed with Estuary's FLV-form video frames.
///
/// It is opened from the stream's video sequence header: the AVCDecoderConfigurationRecord
/// or HEVCDecoderConfigurationRecord becomes the codec's extradata, so the decoder reads the
/// coded frames' length-prefixed NAL units as they are (the FLV video tag header is
/// stripped; PTS = DTS + composition time, in milliseconds).
///
/// Corrupt input is the publisher's problem, not the stream's: a frame whose NAL framing
/// does not tile its payload, or that libavcodec rejects, throws a typed error and is
/// counted in `statistics`; the decoder stays usable and resynchronises at the next
/// keyframe. Decoded pictures are handed out as `VideoFrame`s that own a reference to
/// libavcodec's buffers (no pixel copy).
///
/// Owns its `AVCodecContext`, packet and working frame and frees them in `deinit`; not
/// Sendable, stays on one worker thread. Single-threaded decoding by default
/// (`threadCount: 1`): no frame-thread delay and errors reported on the frame that caused them.
public final class VideoDecoder {
    public struct Statistics: Sendable, Equatable {
        /// Coded frames accepted by the decoder.
        public var packets = 0
        /// Pictures output.
        public var decodedFrames = 0
        /// Coded frames skipped because they were malformed or libavcodec rejected them.
        public var corruptFrames = 0
        /// Pictures output with concealed errors (`AV_FRAME_FLAG_CORRUPT` / decode error flags).
        public var concealedFrames = 0
        /// Errors from `avcodec_receive_frame` (not tied to one input frame).
        public var receiveErrors = 0

        public init() {}
    }

    /// The track described by the sequence header the decoder was opened with.
    public let track: VideoTrack
    public private(set) var statistics = Statistics()

    private let codecContext: CodecContext
    private var context: UnsafeMutablePointer<AVCodecContext> { codecContext.pointer }
    private let packet: Packet
    private let nalUnitLengthSize: Int
    /// PTS (ms) of source keyframes sent but not yet output: pictures leave the decoder in
    /// presentation order, so the keyframe flag is matched by PTS.
    private var pendingKeyframes: [Int64] = []
    private static let millisecondTimeBase = AVRational(num: 1, den: 1000)

    /// Opens a decoder for the codec and configuration of a video sequence header frame.
    ///
    /// Throws the `VideoTrack` errors for frames that are not a parseable AVC/HEVC sequence
    /// header, and `.call` when libavcodec cannot open the decoder.
    public init(sequenceHeader: MediaFrame, threadCount: Int = 1) throws(AVError) {
        let track = try VideoTrack(sequenceHeader: sequenceHeader)
        let codecID: AVCodecID
        let lengthSize: Int
        switch track.codec {
        case .avc:
            codecID = AV_CODEC_ID_H264
            lengthSize = try AVError.parsingConfiguration { () throws(CodecConfigError) in try AVCDecoderConfigurationRecord(from: track.decoderConfiguration) }.nalUnitLengthSize
        case .hevc:
            codecID = AV_CODEC_ID_HEVC
            lengthSize = try AVError.parsingConfiguration { () throws(CodecConfigError) in try HEVCDecoderConfigurationRecord(from: track.decoderConfiguration) }.nalUnitLengthSize
        case .av1:
            codecID = AV_CODEC_ID_AV1
            lengthSize = 0  // OBUs, not length-prefixed NAL units
        default:
            throw .unsupportedVideoCodec(track.codec)
        }
        // AV1: dav1d where libavcodec has it (FFmpeg 5.1's own AV1 decoder needs a hardware
        // accelerator to output pictures).
        let preferred = track.codec == .av1 ? avcodec_find_decoder_by_name("libdav1d") : nil
        guard let codec = preferred ?? avcodec_find_decoder(codecID) else {
            throw .call(operation: "avcodec_find_decoder(\(track.codec))", code: cffmpeg_averror_decoder_not_found())
        }
        let codecContext = try CodecContext(codec: codec, name: "\(track.codec) decoder") { context throws(AVError) in
            context.pointee.pkt_timebase = Self.millisecondTimeBase
            context.pointee.time_base = Self.millisecondTimeBase
            context.pointee.thread_count = Int32(clamping: max(0, threadCount))
            try Self.setExtradata(track.decoderConfiguration, on: context)
        }
        self.packet = try Packet()
        self.codecContext = codecContext
        self.track = track
        self.nalUnitLengthSize = lengthSize
    }


    /// Decodes one coded video frame and returns the pictures that became ready (zero or
    /// more: the decoder reorders B-frames, so output lags input by the reorder depth).
    ///
    /// Frames that carry no picture (sequence headers, end of sequence, commands) return
    /// no pictures. Throws, after counting the frame in `statistics.corruptFrames`:
    /// `.invalidTagHeader` for an unparseable FLV header, `.codecMismatch` for another
    /// codec, `.malformedNALUnits` for broken length prefixes, `.call` when libavcodec
    /// rejects the data. The decoder remains usable after any of these.
    public func decode(_ frame: MediaFrame) throws(AVError) -> [VideoFrame] {
        guard frame.kind == .video else {
            return []
        }
        let header: VideoTagHeader
        do {
            header = try frame.videoTagHeader()
        } catch {
            statistics.corruptFrames += 1
            throw .invalidTagHeader(error)
        }
        guard header.packetType == .codedFrames else {
            return []
        }
        guard header.codec == track.codec else {
            statistics.corruptFrames += 1
            throw .codecMismatch(.video)
        }
        guard let body = frame.codecData(from: header.headerLength), body.readableBytes > 0 else {
            return []
        }
        do {
            if nalUnitLengthSize > 0 { try NALUnits.validateLengthPrefixed(body, lengthSize: nalUnitLengthSize) }
        } catch {
            statistics.corruptFrames += 1
            throw error
        }
        let presentationTime = frame.timestamp + Int64(header.compositionTime)
        do {
            try send(body, dts: frame.timestamp, pts: presentationTime, isKeyframe: header.isKeyframe)
        } catch {
            statistics.corruptFrames += 1
            throw error
        }
        if header.isKeyframe {
            pendingKeyframes.append(presentationTime)
        }
        statistics.packets += 1
        return receiveFrames()
    }

    /// Signals the end of the input and returns the pictures still held for reordering.
    /// The decoder is then reset, ready for a stream that starts at a keyframe.
    public func flush() -> [VideoFrame] {
        _ = avcodec_send_packet(context, nil)
        let frames = receiveFrames()
        avcodec_flush_buffers(context)
        pendingKeyframes.removeAll()
        return frames
    }

    // MARK: - Internals

    /// Copies the NAL units into the packet (the one copy at the boundary) and sends it.
    private func send(_ body: ByteBuffer, dts: Int64, pts: Int64, isKeyframe: Bool) throws(AVError) {
        let size = body.readableBytes
        guard size <= Int(Int32.max) - Int(AV_INPUT_BUFFER_PADDING_SIZE) else {
            throw .malformedNALUnits(offset: 0)
        }
        let pointer = packet.pointer
        try AVError.check(av_new_packet(pointer, Int32(size)), "av_new_packet")
        defer { av_packet_unref(pointer) }
        body.withUnsafeReadableBytes { bytes in
            if let source = bytes.baseAddress, let destination = pointer.pointee.data {
                UnsafeMutableRawPointer(destination).copyMemory(from: source, byteCount: size)
            }
        }
        pointer.pointee.dts = dts
        pointer.pointee.pts = pts
        if isKeyframe {
            pointer.pointee.flags |= AV_PKT_FLAG_KEY
        }
        var code = avcodec_send_packet(context, pointer)
        if code == cffmpeg_averror_eagain() {
            // Output is full (cannot happen when every call drains, but the API allows it):
            // the pictures are lost to the caller, so count them as receive errors.
            statistics.receiveErrors += receiveFrames().count
            code = avcodec_send_packet(context, pointer)
        }
        try AVError.check(code, "avcodec_send_packet")
    }

    private func receiveFrames() -> [VideoFrame] {
        var frames: [VideoFrame] = []
        while true {
            guard let output = try? VideoFrame() else {
                statistics.receiveErrors += 1
                return frames
            }
            let code = avcodec_receive_frame(context, output.pointer)
            if code == cffmpeg_averror_eagain() || code == cffmpeg_averror_eof() {
                return frames
            }
            guard code >= 0 else {
                statistics.receiveErrors += 1
                return frames
            }
            var pts = output.pointer.pointee.pts
            if pts == cffmpeg_av_nopts_value() {
                pts = output.pointer.pointee.best_effort_timestamp
            }
            output.presentationTime = pts
            // Keyframe PTS not yet output that are at or before this picture's are either
            // this one or lost (a keyframe the decoder dropped): either way they are done.
            var isKeyframe = false
            pendingKeyframes.removeAll { keyframe in
                if keyframe == pts { isKeyframe = true }
                return keyframe <= pts
            }
            output.isSourceKeyframe = isKeyframe
            if output.isCorrupt {
                statistics.concealedFrames += 1
            }
            statistics.decodedFrames += 1
            frames.append(output)
        }
    }

    /// Stores a copy of `bytes` as the extradata; `avcodec_free_context` frees it.
    private static func setExtradata(_ bytes: ByteBuffer, on context: UnsafeMutablePointer<AVCodecContext>) throws(AVError) {
        let (pointer, size) = try Extradata.copy(bytes)
        context.pointee.extradata = pointer
        context.pointee.extradata_size = size
    }
}

@available(*, unavailable)
extension VideoDecoder: Sendable {}
