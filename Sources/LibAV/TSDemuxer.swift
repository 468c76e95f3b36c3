import CFFmpeg
import Media
import NIOCore

/// MPEG-TS in, the stream hub's FLV-shaped frames out: libavformat's `mpegts` demuxer reads
/// from a blocking source (an SRT socket) through a read-only `AVIOContext`, and each packet
/// becomes a `MediaFrame`.
///
/// - H.264 (Annex B in TS) becomes length-prefixed NAL units, after an AVC sequence header
///   built from the SPS and PPS of the first keyframe (and again when they change).
/// - HEVC becomes Enhanced RTMP `hvc1` frames, after a SequenceStart with an hvcC built
///   from the VPS, SPS and PPS of the first keyframe (and again when they change).
/// - AAC (ADTS in TS) becomes raw AAC frames, after an AudioSpecificConfig sequence header
///   read from the first ADTS header; a PES packet may carry several ADTS frames.
/// - Opus (as libavformat reads it: the `Opus` registration descriptor and its extension
///   descriptor for the channels, the control headers taken off by its parser) becomes
///   Enhanced RTMP `Opus` frames, after a SequenceStart with the OpusHead libavformat
///   builds from the descriptor (again if it changes).
/// - Timestamps are milliseconds from the first packet's DTS; other codecs are skipped
///   (and counted), as the FLV-shaped hub cannot carry them.
///
/// Everything runs on the caller's thread: `read` is called from inside `nextFrames`.
public final class TSDemuxer {
    /// Reads up to `buffer.count` bytes of TS; returns the count, 0 at the end of the
    /// stream, or a negative number for an error.
    public typealias Read = (_ buffer: UnsafeMutableRawBufferPointer) -> Int

    /// The statistics a session reports.
    public struct Statistics: Sendable, Equatable {
        public var packets = 0
        public var skippedPackets = 0
        public var bytesIn = 0
    }

    public private(set) var statistics = Statistics()

    /// 64 KiB: libav's read staging; an SRT read returns one 1316-byte message at a time.
    static let ioBufferSize = 64 * 1024
    /// How much of the stream the demuxer may read before it knows its programs.
    static let probeBytes: Int64 = 512 * 1024

    private let read: Read
    private var formatContext: UnsafeMutablePointer<AVFormatContext>?
    private var ioContext: UnsafeMutablePointer<AVIOContext>?
    private let packet: UnsafeMutablePointer<AVPacket>
    private let allocator = ByteBufferAllocator()

    private var videoConfiguration: ByteBuffer?
    private var audioConfiguration: [UInt8]?
    private var opusHead: [UInt8]?
    /// The last OpusHead that did not pass the check: not parsed again for every packet.
    private var rejectedOpusHead: [UInt8]?
    /// The first DTS seen, in milliseconds: timestamps count from it.
    private var origin: Int64?

    public init(read: @escaping Read) throws(AVError) {
        self.read = read
        guard let packet = av_packet_alloc() else { throw .call(operation: "av_packet_alloc", code: cffmpeg_averror_enomem()) }
        self.packet = packet
        guard let staging = av_malloc(Self.ioBufferSize) else {
            throw .call(operation: "av_malloc", code: cffmpeg_averror_enomem())
        }
        guard let io = avio_alloc_context(
            staging.assumingMemoryBound(to: UInt8.self), Int32(Self.ioBufferSize), 0, nil,
            { opaque, bytes, count in
                guard let opaque, let bytes, count > 0 else { return cffmpeg_averror_einval() }
                let demuxer = Unmanaged<TSDemuxer>.fromOpaque(opaque).takeUnretainedValue()
                return demuxer.fill(UnsafeMutableRawBufferPointer(start: bytes, count: Int(count)))
            },
            nil, nil
        ) else {
            av_free(staging)
            throw .call(operation: "avio_alloc_context", code: cffmpeg_averror_enomem())
        }
        ioContext = io
        io.pointee.opaque = Unmanaged.passUnretained(self).toOpaque()
        guard let context = avformat_alloc_context() else {
            throw .call(operation: "avformat_alloc_context", code: cffmpeg_averror_enomem())
        }
        context.pointee.pb = io
        // The parsers stay on, though the H.264 parser holds a frame until it has read the
        // start of the next (one frame of latency, 33 ms at 30 fps): encoders that give video
        // PES a fixed length split a large frame over several PES, ADTS frames may cross a
        // PES, and only the parsers put those back together.
        context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        context.pointee.probesize = Self.probeBytes
        context.pointee.max_analyze_duration = 1_000_000
        formatContext = context
        let format = av_find_input_format("mpegts")
        var opened: UnsafeMutablePointer<AVFormatContext>? = context
        let code = avformat_open_input(&opened, nil, format, nil)
        guard code >= 0 else {
            // avformat_open_input frees the context on failure.
            formatContext = nil
            throw .call(operation: "avformat_open_input(mpegts)", code: code)
        }
        formatContext = opened
        let found = avformat_find_stream_info(opened, nil)
        guard found >= 0 else { throw .call(operation: "avformat_find_stream_info", code: found) }
    }

    deinit {
        if formatContext != nil { avformat_close_input(&formatContext) }
        if let io = ioContext {
            av_freep(&io.pointee.buffer)
            var context: UnsafeMutablePointer<AVIOContext>? = io
            avio_context_free(&context)
        }
        var packet: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&packet)
    }

    private func fill(_ buffer: UnsafeMutableRawBufferPointer) -> Int32 {
        let count = read(buffer)
        if count == 0 { return cffmpeg_averror_eof() }
        if count < 0 { return cffmpeg_averror_eof() }
        statistics.bytesIn += count
        return Int32(count)
    }

    /// The frames of the next TS packet (possibly none: a skipped codec, a frame before
    /// its parameter sets); nil at the end of the stream.
    public func nextFrames() throws(AVError) -> [MediaFrame]? {
        guard let context = formatContext else { return nil }
        let code = av_read_frame(context, packet)
        if code == cffmpeg_averror_eof() { return nil }
        guard code >= 0 else { throw .call(operation: "av_read_frame", code: code) }
        defer { av_packet_unref(packet) }
        statistics.packets += 1
        let index = Int(packet.pointee.stream_index)
        guard index >= 0, index < Int(context.pointee.nb_streams), let stream = context.pointee.streams[index],
              let parameters = stream.pointee.codecpar, let data = packet.pointee.data, packet.pointee.size > 0
        else {
            statistics.skippedPackets += 1
            return []
        }
        let bytes = UnsafeRawBufferPointer(start: data, count: Int(packet.pointee.size))
        let timeBase = stream.pointee.time_base
        let pts = packet.pointee.pts == cffmpeg_av_nopts_value() ? packet.pointee.dts : packet.pointee.pts
        let dts = packet.pointee.dts == cffmpeg_av_nopts_value() ? pts : packet.pointee.dts
        guard dts != cffmpeg_av_nopts_value() else {
            statistics.skippedPackets += 1
            return []
        }
        let milliseconds = AVRational(num: 1, den: 1000)
        let dtsMilliseconds = av_rescale_q(dts, timeBase, milliseconds)
        let ptsMilliseconds = av_rescale_q(pts, timeBase, milliseconds)
        let start = origin ?? dtsMilliseconds
        origin = start
        let timestamp = max(0, dtsMilliseconds - start)
        switch parameters.pointee.codec_id {
        case AV_CODEC_ID_H264, AV_CODEC_ID_HEVC:
            return video(
                bytes, codec: parameters.pointee.codec_id == AV_CODEC_ID_HEVC ? .hevc : .avc, timestamp: timestamp,
                compositionTime: ptsMilliseconds - dtsMilliseconds, isKeyframe: packet.pointee.flags & AV_PKT_FLAG_KEY != 0
            )
        case AV_CODEC_ID_AAC:
            let sampleRate = Int(parameters.pointee.sample_rate)
            return audio(bytes, timestamp: timestamp, sampleRate: sampleRate)
        case AV_CODEC_ID_OPUS:
            let extradata = parameters.pointee.extradata.map { UnsafeRawBufferPointer(start: $0, count: Int(max(0, parameters.pointee.extradata_size))) }
            return opus(bytes, head: extradata, timestamp: timestamp)
        default:
            statistics.skippedPackets += 1
            return []
        }
    }

    /// H.264 becomes legacy AVC tags, HEVC Enhanced RTMP `hvc1` tags: a sequence header
    /// with the configuration record built from the keyframe's parameter sets (again when
    /// they change), then coded frames with length-prefixed NAL units. Keyframes are as the
    /// demuxer flags them: its parsers mark IDR and recovery points (H.264) and IRAP
    /// pictures (HEVC), so the NAL units are not scanned again here.
    private func video(_ bytes: UnsafeRawBufferPointer, codec: VideoCodec, timestamp: Int64, compositionTime: Int64, isKeyframe: Bool) -> [MediaFrame] {
        var frames: [MediaFrame] = []
        let isHEVC = codec == .hevc
        if isKeyframe {
            let record = isHEVC
                ? (try? NALUnits.hevcDecoderConfigurationRecord(fromAnnexB: bytes, allocator: allocator))?.bytes
                : (try? NALUnits.avcDecoderConfigurationRecord(fromAnnexB: bytes, allocator: allocator))?.bytes
            if let record, record != videoConfiguration {
                videoConfiguration = record
                frames.append(isHEVC
                    ? FLVPayload.hevcSequenceStart(record, timestamp: timestamp, allocator: allocator)
                    : FLVPayload.avcSequenceHeader(record, timestamp: timestamp, allocator: allocator))
            }
        }
        // Nothing plays before its parameter sets.
        guard videoConfiguration != nil else {
            statistics.skippedPackets += 1
            return frames
        }
        let start = isHEVC
            ? FLVPayload.hevcCodedFrameStart(isKeyframe: isKeyframe, compositionTime: compositionTime, bodyCapacity: bytes.count + 16, allocator: allocator)
            : FLVPayload.avcCodedFrameStart(isKeyframe: isKeyframe, compositionTime: compositionTime, bodyCapacity: bytes.count + 16, allocator: allocator)
        var payload = start.payload
        if (try? NALUnits.writeLengthPrefixed(annexB: bytes, into: &payload)) == nil {
            statistics.skippedPackets += 1
            return frames
        }
        frames.append(MediaFrame(timestamp: timestamp, video: start.header, payload: payload))
        return frames
    }

    /// Enhanced RTMP `Opus` tags: a SequenceStart with the stream's OpusHead (checked, as an
    /// RTMP publisher's is), then each packet as it comes. Nothing plays before its header.
    private func opus(_ bytes: UnsafeRawBufferPointer, head: UnsafeRawBufferPointer?, timestamp: Int64) -> [MediaFrame] {
        var frames: [MediaFrame] = []
        if let head, !head.elementsEqual(opusHead ?? []), !head.elementsEqual(rejectedOpusHead ?? []) {
            if (try? OpusHead(from: ByteBuffer(bytes: head))) != nil {
                opusHead = Array(head)
                frames.append(FLVPayload.opus(.sequenceStart, head, timestamp: timestamp, allocator: allocator))
            } else {
                rejectedOpusHead = Array(head)
            }
        }
        guard opusHead != nil else {
            statistics.skippedPackets += 1
            return frames
        }
        frames.append(FLVPayload.opus(.codedFrames, bytes, timestamp: timestamp, allocator: allocator))
        return frames
    }

    private func audio(_ bytes: UnsafeRawBufferPointer, timestamp: Int64, sampleRate: Int) -> [MediaFrame] {
        var frames: [MediaFrame] = []
        var offset = 0
        var index: Int64 = 0
        while offset < bytes.count {
            guard let frame = ADTSHeader(bytes, at: offset) else {
                statistics.skippedPackets += 1
                break
            }
            let configuration = frame.audioSpecificConfig
            let rate = frame.sampleRate ?? sampleRate
            let at = timestamp + (rate > 0 ? index * 1024 * 1000 / Int64(rate) : 0)
            if configuration != audioConfiguration {
                audioConfiguration = configuration
                frames.append(FLVPayload.aacSequenceHeader(configuration, timestamp: at, allocator: allocator))
            }
            let body = UnsafeRawBufferPointer(rebasing: bytes[(offset + frame.headerLength)..<(offset + frame.frameLength)])
            frames.append(FLVPayload.aacFrame(body, timestamp: at, allocator: allocator))
            offset += frame.frameLength
            index += 1
        }
        return frames
    }
}

@available(*, unavailable)
extension TSDemuxer: Sendable {}

/// One ADTS header (ISO/IEC 13818-7 §6.2): the AAC frame's length and what its
/// AudioSpecificConfig is.
struct ADTSHeader {
    let headerLength: Int
    let frameLength: Int
    let audioSpecificConfig: [UInt8]
    let sampleRate: Int?

    static let sampleRates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

    /// The header at `offset`, or nil when there is none or the frame overruns `bytes`.
    init?(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
        guard bytes.count - offset >= 7, bytes[offset] == 0xFF, bytes[offset + 1] & 0xF6 == 0xF0 else { return nil }
        let protectionAbsent = bytes[offset + 1] & 0x01 == 1
        let profile = (bytes[offset + 2] >> 6) & 0x03
        let frequencyIndex = (bytes[offset + 2] >> 2) & 0x0F
        let channels = ((bytes[offset + 2] & 0x01) << 2) | ((bytes[offset + 3] >> 6) & 0x03)
        let length = (Int(bytes[offset + 3] & 0x03) << 11) | (Int(bytes[offset + 4]) << 3) | (Int(bytes[offset + 5]) >> 5)
        let header = protectionAbsent ? 7 : 9
        guard frequencyIndex < 13, length > header, offset + length <= bytes.count else { return nil }
        headerLength = header
        frameLength = length
        let objectType = profile + 1
        audioSpecificConfig = [(objectType << 3) | (frequencyIndex >> 1), ((frequencyIndex & 1) << 7) | (channels << 3)]
        sampleRate = Self.sampleRates[Int(frequencyIndex)]
    }
}
