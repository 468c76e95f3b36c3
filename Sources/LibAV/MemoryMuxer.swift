import CFFmpeg
import Media
import NIOCore

/// A libavformat muxer that writes into memory: MPEG-TS segments for classic HLS, or an
/// fMP4/CMAF initialization segment and fragments for LL-HLS.
///
/// Input is Estuary's `MediaFrame`s in DTS order (FLV tag bodies, millisecond timestamps).
/// Sequence headers configure the tracks at `init` and are checked, not written, later;
/// script frames are ignored. Each coded frame is copied once into an `AVPacket` and
/// written with `av_write_frame` (not the interleaving variant: the input is already
/// interleaved by DTS, and interleaving would hold frames back across a cut).
///
/// The muxer owns its `AVFormatContext`, custom `AVIOContext` and packet and frees them in
/// `deinit`; it is not Sendable and must stay on one thread.
public final class MemoryMuxer {
    /// The output container.
    public enum Container: Sendable, Hashable {
        /// MPEG-2 transport stream (libavformat `mpegts`); output taken with `takeOutput()`.
        case mpegTS
        /// Fragmented MP4 / CMAF (libavformat `mp4`): `initializationSegment()` once, then
        /// one `moof`+`mdat` per `flushFragment()`.
        case fragmentedMP4

        var formatName: String {
            switch self {
            case .mpegTS: "mpegts"
            case .fragmentedMP4: "mp4"
            }
        }
    }

    /// The default bound on output bytes not yet taken: 64 MiB holds a 6 s segment at over
    /// 80 Mbit/s, far beyond any live ladder, while a caller that forgets to take output
    /// gets an error instead of exhausting memory.
    public static let defaultMaximumBufferedBytes = 64 * 1024 * 1024

    /// The mp4 muxer flags (`-movflags`) of the fMP4 container, all present in FFmpeg 5.1:
    /// - `empty_moov`: `avformat_write_header` writes ftyp + a moov without samples, the
    ///   initialization segment;
    /// - `frag_custom`: a fragment is closed only when `flushFragment()` asks, so the
    ///   caller cuts segments and LL-HLS parts where it wants (not at every keyframe);
    /// - `default_base_moof`: `trun` data offsets are relative to their own `moof`, no
    ///   `base_data_offset` (an absolute file position, meaningless for fragments served
    ///   separately); this also implies what `omit_tfhd_offset` would do;
    /// - `skip_sidx`, `skip_trailer`: no `sidx` before a fragment and no `mfra` index at
    ///   the end, which only make sense for a complete file;
    /// - `frag_discont`: tfdt carries the frames' own DTS instead of restarting at 0, so a
    ///   muxer created mid-stream (late start, codec change) keeps the stream's timeline
    ///   and the audio/video offset.
    ///
    /// Not `cmaf`: with it, fragments use version-1 `trun` boxes with negative composition
    /// offsets (tfdt = the first presentation time). Browsers read those right, but FFmpeg's
    /// mov demuxer shifts a whole track by its largest negative offset, so every
    /// FFmpeg-based player (ffplay, mpv, VLC's avformat path, restreamers) saw B-frame video
    /// one reorder delay late against audio, and against the MPEG-TS variant (67 ms at 30
    /// fps with two B-frames). Without it the offsets are positive (tfdt = the first DTS,
    /// PTS = DTS + offset), which every player reads the same way, as it reads MPEG-TS.
    /// The cost is the `cmfc` brand, which no HLS player requires.
    static let fragmentedMP4Flags = "+empty_moov+frag_custom+default_base_moof+skip_sidx+skip_trailer+frag_discont"

    private enum State {
        case writing
        case finished
    }

    /// What the muxer keeps per track between frames, timestamps in the stream time base.
    private struct StreamState {
        var index: Int32
        /// Chosen by the muxer in `avformat_write_header` (90 kHz for TS; the track
        /// timescale for MP4).
        var timeBase: AVRational
        var lastDTS: Int64?
        /// The duration given to the next packet when it is not known exactly (video):
        /// the last DTS step, or a guess from the SPS frame rate before there is one.
        var durationGuess: Int64
    }

    /// FLV timestamps are milliseconds.
    static let millisecondTimeBase = AVRational(num: 1, den: 1000)

    public let container: Container
    public let videoTrack: VideoTrack?
    public let audioTrack: AudioTrack?

    private let context: UnsafeMutablePointer<AVFormatContext>
    private let io: MemoryIOContext
    private let packet: Packet
    private var video: StreamState?
    private var audio: StreamState?
    /// AAC frame duration in the audio stream time base.
    private var audioFrameDuration: Int64 = 0
    private var initialization: ByteBuffer
    private var state: State = .writing
    /// fMP4 only: the last video frame, held until the next one (or the end of the
    /// fragment) tells its exact duration. mov writes the last sample's duration into the
    /// fragment and realigns the next fragment to it, so a guess that overshoots the real
    /// next DTS turns into a negative duration and a lost pts there.
    private var pendingVideo: PendingVideo?

    private struct PendingVideo {
        var payload: ByteBuffer
        var offset: Int
        var dts: Int64
        var pts: Int64
        var isKeyframe: Bool
    }

    /// Creates the muxer, writes the container header and, for fMP4, captures the
    /// initialization segment.
    ///
    /// - Parameters:
    ///   - container: MPEG-TS or fragmented MP4.
    ///   - video: the video track, from the stream's video sequence header; nil for audio only.
    ///   - audio: the audio track, from the AAC sequence header; nil for video only.
    ///   - maximumBufferedBytes: output not yet taken beyond which writes fail with
    ///     `AVERROR(ENOSPC)`.
    ///   - allocator: allocates the output buffers.
    public init(
        container: Container,
        video videoTrack: VideoTrack?,
        audio audioTrack: AudioTrack?,
        maximumBufferedBytes: Int = MemoryMuxer.defaultMaximumBufferedBytes,
        allocator: ByteBufferAllocator = ByteBufferAllocator()
    ) throws(AVError) {
        guard videoTrack != nil || audioTrack != nil else {
            throw .noTracks
        }
        let io = try MemoryIOContext(maximumBufferedBytes: maximumBufferedBytes, allocator: allocator)
        let packet = try Packet()

        var allocated: UnsafeMutablePointer<AVFormatContext>?
        try AVError.check(
            avformat_alloc_output_context2(&allocated, nil, container.formatName, nil),
            "avformat_alloc_output_context2(\(container.formatName))"
        )
        guard let context = allocated else {
            throw .call(operation: "avformat_alloc_output_context2", code: cffmpeg_averror_enomem())
        }
        // Until every step succeeded, the context is ours to free here; after, deinit's.
        var initialized = false
        defer {
            if !initialized {
                avformat_free_context(context)
            }
        }
        context.pointee.pb = io.context
        context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO

        var videoIndex: Int32?
        var audioIndex: Int32?
        if let videoTrack {
            videoIndex = try Self.addVideoStream(videoTrack, to: context, container: container)
        }
        if let audioTrack {
            audioIndex = try Self.addAudioStream(audioTrack, to: context)
        }
        if container == .fragmentedMP4 {
            try AVError.check(
                av_opt_set(context.pointee.priv_data, "movflags", Self.fragmentedMP4Flags, 0),
                "av_opt_set(movflags)"
            )
            // No edit list (a player would apply it on top of the composition offsets), and no
            // shift of every track to start at zero, the mp4 muxer's default for fragments
            // without edit lists: that would lose the stream's timeline that `frag_discont`
            // keeps. Only what is negative is shifted.
            try AVError.check(av_opt_set(context.pointee.priv_data, "use_editlist", "0", 0), "av_opt_set(use_editlist)")
            context.pointee.avoid_negative_ts = AVFMT_AVOID_NEG_TS_MAKE_NON_NEGATIVE

        }
        try AVError.check(avformat_write_header(context, nil), "avformat_write_header")
        try io.flush()

        self.container = container
        self.videoTrack = videoTrack
        self.audioTrack = audioTrack
        self.context = context
        self.io = io
        self.packet = packet
        self.initialization = container == .fragmentedMP4 ? io.take() : allocator.buffer(capacity: 0)
        if let videoIndex, let videoTrack {
            let timeBase = context.pointee.streams[Int(videoIndex)]!.pointee.time_base
            var guess: Int64 = 0
            // The SPS is the peer's: only a plausible rate makes a guess.
            if let frameRate = videoTrack.frameRate, frameRate >= 1, frameRate <= 1000 {
                guess = Int64((Double(timeBase.den) / Double(timeBase.num) / frameRate).rounded())
            }
            self.video = StreamState(index: videoIndex, timeBase: timeBase, lastDTS: nil, durationGuess: guess)
        }
        if let audioIndex, let audioTrack {
            let timeBase = context.pointee.streams[Int(audioIndex)]!.pointee.time_base
            // An AAC frame is 1024 samples at the core sampling frequency (with SBR, 2048
            // output samples at twice the rate: the same duration). An Opus packet says its
            // own duration; 20 ms is the first guess.
            let frameDuration = av_rescale_q(
                Int64(audioTrack.samplesPerFrame),
                AVRational(num: 1, den: Int32(clamping: audioTrack.clockRate)),
                timeBase
            )
            self.audioFrameDuration = frameDuration
            self.audio = StreamState(index: audioIndex, timeBase: timeBase, lastDTS: nil, durationGuess: frameDuration)
        }
        initialized = true
    }

    deinit {
        // Frees the streams, their extradata and the muxer's private state (also when
        // the trailer was never written). The AVIOContext is not touched (CUSTOM_IO); it
        // is freed afterwards by `io`'s own deinit.
        avformat_free_context(context)
    }

    // MARK: - Output

    /// The fMP4 initialization segment (`ftyp` + `moov`), as written by
    /// `avformat_write_header`. Empty for MPEG-TS, whose segments are self-describing.
    public func initializationSegment() -> ByteBuffer {
        initialization
    }

    /// fMP4: closes the current fragment and returns it (`moof` + `mdat`), or an empty
    /// buffer when no frame was written since the last flush.
    ///
    /// - Parameter nextTimestamp: the DTS (ms) of the frame that will follow, when known
    ///   (the segmenter flushes right before writing it): it gives the fragment's last
    ///   video sample its exact duration.
    public func flushFragment(endingAt nextTimestamp: Int64? = nil) throws(AVError) -> ByteBuffer {
        guard container == .fragmentedMP4, state == .writing else {
            throw .invalidState(operation: "flushFragment")
        }
        try writePendingVideo(nextTimestamp: nextTimestamp)
        // A NULL packet is the flush request of AVFMT_ALLOW_FLUSH muxers; mov answers it
        // with mov_flush_fragment under frag_custom.
        try AVError.check(av_write_frame(context, nil), "av_write_frame(flush)")
        try io.flush()
        return io.take()
    }

    /// MPEG-TS: returns the bytes written since the last take: one segment when called
    /// before the frame that starts the next one (a keyframe).
    ///
    /// Audio PES packets the muxer still holds (it gathers several AAC frames per PES) are
    /// flushed first, so they stay in this segment. Then `mpegts_flags=resend_headers` is
    /// armed: the next PES packet written is preceded by SDT, PAT and PMT, so every
    /// segment is decodable on its own. One persistent muxer (rather than one per
    /// segment) keeps the continuity counters and timestamps running across segments.
    ///
    /// A continuous stream cut into many small takes (SRT playback) passes
    /// `resendHeaders: false` except before a keyframe, so that tables precede each place a
    /// player can join, not every take.
    public func takeOutput(resendHeaders: Bool = true) throws(AVError) -> ByteBuffer {
        guard container == .mpegTS, state == .writing else {
            throw .invalidState(operation: "takeOutput")
        }
        try AVError.check(av_write_frame(context, nil), "av_write_frame(flush)")
        try io.flush()
        if resendHeaders {
            try AVError.check(
                av_opt_set(context.pointee.priv_data, "mpegts_flags", "+resend_headers", 0),
                "av_opt_set(mpegts_flags)"
            )
        }
        return io.take()
    }

    /// Writes the trailer and returns the remaining output (the last fragment, or the end
    /// of the last TS segment). The muxer accepts nothing afterwards.
    public func finish() throws(AVError) -> ByteBuffer {
        guard state == .writing else {
            throw .invalidState(operation: "finish")
        }
        try writePendingVideo(nextTimestamp: nil)
        state = .finished
        try AVError.check(av_write_trailer(context), "av_write_trailer")
        try io.flush()
        return io.take()
    }

    // MARK: - Input

    /// Writes one frame.
    ///
    /// - Coded video: the FLV video tag header (legacy 5 bytes or enhanced RTMP) is
    ///   stripped; pts = dts + composition time; the keyframe flag is kept. NAL units stay
    ///   length-prefixed: MP4 stores them so, and for MPEG-TS libavformat inserts the
    ///   `h264_mp4toannexb` / `hevc_mp4toannexb` filter itself (start codes, parameter
    ///   sets before each IDR).
    /// - AAC and Opus: the FLV audio tag header is stripped; for MPEG-TS the muxer adds
    ///   ADTS headers from the AudioSpecificConfig (AAC) or Opus control headers.
    /// - Sequence headers equal to the track's configuration and script frames are
    ///   skipped; a different sequence header throws `.configurationChanged`.
    /// - Other video packet types (sequence end, metadata, commands) and empty coded frames
    ///   carry nothing to mux and are skipped.
    ///
    /// A DTS not above the previous one of its track (millisecond rounding, clock jitter)
    /// is moved one tick past it, since libavformat rejects non-increasing DTS. AAC
    /// timestamps are made sample-exact while they stay within one frame of the input's.
    public func write(_ frame: MediaFrame) throws(AVError) {
        guard state == .writing else {
            throw .invalidState(operation: "write")
        }
        switch frame.kind {
        case .script:
            return
        case .video:
            try writeVideo(frame)
        case .audio:
            try writeAudio(frame)
        }
    }

    private func writeVideo(_ frame: MediaFrame) throws(AVError) {
        guard let track = videoTrack, var stream = video else {
            throw .trackNotConfigured(.video)
        }
        let header: VideoTagHeader
        do {
            header = try frame.videoTagHeader()
        } catch {
            throw .invalidTagHeader(error)
        }
        switch header.packetType {
        case .sequenceStart:
            guard header.codec == track.codec,
                  frame.codecData(from: header.headerLength) == track.decoderConfiguration
            else {
                throw .configurationChanged(.video)
            }
            return
        case .codedFrames:
            break
        case .sequenceEnd, .metadata, .mpeg2TSSequenceStart, .command:
            return
        }
        guard header.codec == track.codec else {
            throw .codecMismatch(.video)
        }
        guard frame.payload.readableBytes > header.headerLength else {
            return
        }
        let current = PendingVideo(
            payload: frame.payload,
            offset: header.headerLength,
            dts: frame.timestamp,
            pts: frame.presentationTimestamp,
            isKeyframe: header.isKeyframe
        )
        if container == .fragmentedMP4 {
            try writePendingVideo(nextTimestamp: frame.timestamp)
            pendingVideo = current
            return
        }
        try writePacket(current.payload, offset: current.offset, dts: current.dts, pts: current.pts, isKeyframe: current.isKeyframe, exactDuration: nil, stream: &stream)
        video = stream
    }

    /// Writes the held video frame, with its duration up to `nextTimestamp` when known.
    private func writePendingVideo(nextTimestamp: Int64?) throws(AVError) {
        guard let pending = pendingVideo, var stream = video else { return }
        pendingVideo = nil
        try writePacket(
            pending.payload,
            offset: pending.offset,
            dts: pending.dts,
            pts: pending.pts,
            isKeyframe: pending.isKeyframe,
            exactDuration: nil,
            nextDTS: nextTimestamp,
            stream: &stream
        )
        video = stream
    }

    private func writeAudio(_ frame: MediaFrame) throws(AVError) {
        guard let track = audioTrack, var stream = audio else {
            throw .trackNotConfigured(.audio)
        }
        let header: AudioTagHeader
        do {
            header = try frame.audioTagHeader()
        } catch {
            throw .invalidTagHeader(error)
        }
        guard header.codec == track.codec else {
            throw .codecMismatch(.audio)
        }
        if header.isSequenceHeader {
            guard frame.codecData(from: header.headerLength) == track.decoderConfiguration else {
                throw .configurationChanged(.audio)
            }
            return
        }
        guard header.aacPacketType == .raw || header.packetType == .codedFrames,
              frame.payload.readableBytes > header.headerLength
        else {
            return
        }
        // FFmpeg's MPEG-TS muxer refuses an Opus packet under 2 bytes (a TOC alone, as DTX
        // silence can be): skipped, not a muxer error that would cost the viewers a GOP.
        if track.codec == .opus, container == .mpegTS, frame.payload.readableBytes - header.headerLength < 2 {
            return
        }
        var duration = audioFrameDuration
        if track.codec == .opus {
            // Opus packets run 2.5 to 120 ms, each saying which in its TOC byte.
            let coded = frame.payload.readableBytesView.dropFirst(header.headerLength)
            if let samples = OpusHead.packetSamples(coded) {
                duration = av_rescale_q(Int64(samples), AVRational(num: 1, den: Int32(OpusHead.clockRate)), stream.timeBase)
            }
        }
        try writePacket(
            frame.payload,
            offset: header.headerLength,
            dts: frame.timestamp,
            pts: frame.timestamp,
            isKeyframe: true,
            exactDuration: duration,
            stream: &stream
        )
        audio = stream
    }

    /// Copies `payload` from `offset` into the packet (the one copy at the boundary),
    /// stamps it in the stream's time base and writes it.
    ///
    /// `exactDuration` is known for audio. For video the duration of a frame is only known
    /// when the next one arrives, but the mp4 muxer needs it for the last sample of a
    /// fragment; the last DTS step is the guess (what mov itself would estimate, without
    /// its warning). The mp4 muxer realigns the next fragment's first DTS to that guess.
    private func writePacket(
        _ payload: ByteBuffer,
        offset: Int,
        dts dtsMilliseconds: Int64,
        pts ptsMilliseconds: Int64,
        isKeyframe: Bool,
        exactDuration: Int64?,
        nextDTS nextDTSMilliseconds: Int64? = nil,
        stream: inout StreamState
    ) throws(AVError) {
        let size = payload.readableBytes - offset
        guard size > 0, size <= Int(Int32.max) - Int(AV_INPUT_BUFFER_PADDING_SIZE) else {
            throw .call(operation: "av_new_packet", code: cffmpeg_averror_einval())
        }
        let pointer = packet.pointer
        try AVError.check(av_new_packet(pointer, Int32(size)), "av_new_packet")
        defer { av_packet_unref(pointer) }
        payload.withUnsafeReadableBytes { bytes in
            UnsafeMutableRawPointer(pointer.pointee.data).copyMemory(from: bytes.baseAddress! + offset, byteCount: size)
        }

        var dts = av_rescale_q(dtsMilliseconds, Self.millisecondTimeBase, stream.timeBase)
        let compositionOffset = av_rescale_q(ptsMilliseconds, Self.millisecondTimeBase, stream.timeBase) - dts
        if let exactDuration, let lastDTS = stream.lastDTS {
            // Milliseconds cannot express an AAC frame (1024 / 44100 s = 23.22 ms), so FLV
            // steps alternate 23 and 24 ms. mp4 derives sample durations from DTS steps
            // and realigns each fragment's first DTS to the previous fragment's end, so
            // rounded steps turn into negative durations there. Within one frame of the
            // sample-exact time, the sample-exact time is used; beyond that (a gap, a
            // jump, clock drift adding up) the input's time wins.
            // The previous frame's duration (Opus frames vary; AAC's are all alike).
            let expected = lastDTS + stream.durationGuess
            if abs(dts - expected) < min(exactDuration, stream.durationGuess) {
                dts = expected
            }
        }
        if let lastDTS = stream.lastDTS, dts <= lastDTS {
            dts = lastDTS + 1
        }
        let pts = dts + max(compositionOffset, 0)
        if let exactDuration {
            stream.durationGuess = exactDuration
        } else if let nextDTSMilliseconds, nextDTSMilliseconds > dtsMilliseconds {
            stream.durationGuess = max(av_rescale_q(nextDTSMilliseconds, Self.millisecondTimeBase, stream.timeBase) - dts, 1)
        } else if let lastDTS = stream.lastDTS {
            stream.durationGuess = dts - lastDTS
        }
        stream.lastDTS = dts

        pointer.pointee.stream_index = stream.index
        pointer.pointee.dts = dts
        pointer.pointee.pts = pts
        pointer.pointee.duration = stream.durationGuess
        if isKeyframe {
            pointer.pointee.flags |= AV_PKT_FLAG_KEY
        }
        try AVError.check(av_write_frame(context, pointer), "av_write_frame")
    }
}

@available(*, unavailable)
extension MemoryMuxer: Sendable {}
