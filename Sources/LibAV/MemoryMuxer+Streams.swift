import CFFmpeg
import Media
import NIOCore

/// The muxer's streams: one video and one audio track (AAC or Opus), with their codec parameters and
/// extradata, as `init` adds them.
extension MemoryMuxer {
    static func addVideoStream(
        _ track: VideoTrack,
        to context: UnsafeMutablePointer<AVFormatContext>,
        container: Container
    ) throws(AVError) -> Int32 {
        guard let stream = avformat_new_stream(context, nil) else {
            throw .call(operation: "avformat_new_stream", code: cffmpeg_averror_enomem())
        }
        stream.pointee.time_base = millisecondTimeBase
        let parameters = stream.pointee.codecpar!
        parameters.pointee.codec_type = AVMEDIA_TYPE_VIDEO
        switch track.codec {
        case .av1:
            // MPEG-TS has no AV1 mapping FFmpeg 5.1 writes: fMP4 (av01 + av1C) only.
            guard container == .fragmentedMP4 else { throw .unsupportedVideoCodec(.av1) }
            parameters.pointee.codec_id = AV_CODEC_ID_AV1
        case .hevc:
            parameters.pointee.codec_id = AV_CODEC_ID_HEVC
            // mov's default HEVC sample entry is hev1 (parameter sets in band); hvc1 says
            // they are in hvcC only, which is what Apple players require.
            parameters.pointee.codec_tag = container == .fragmentedMP4 ? cffmpeg_tag_hvc1() : 0
        default:
            parameters.pointee.codec_id = AV_CODEC_ID_H264
            parameters.pointee.codec_tag = container == .fragmentedMP4 ? cffmpeg_tag_avc1() : 0
        }
        parameters.pointee.width = Int32(clamping: track.width)
        parameters.pointee.height = Int32(clamping: track.height)
        try setExtradata(track.decoderConfiguration, on: parameters)
        return stream.pointee.index
    }

    static func addAudioStream(
        _ track: AudioTrack,
        to context: UnsafeMutablePointer<AVFormatContext>
    ) throws(AVError) -> Int32 {
        guard let stream = avformat_new_stream(context, nil) else {
            throw .call(operation: "avformat_new_stream", code: cffmpeg_averror_enomem())
        }
        stream.pointee.time_base = millisecondTimeBase
        let parameters = stream.pointee.codecpar!
        parameters.pointee.codec_type = AVMEDIA_TYPE_AUDIO
        switch track.format {
        case .aac:
            parameters.pointee.codec_id = AV_CODEC_ID_AAC
        case .opus(let head):
            // mov writes `dOps` from the OpusHead extradata; both muxers take the pre-skip
            // as the stream's initial padding.
            parameters.pointee.codec_id = AV_CODEC_ID_OPUS
            parameters.pointee.initial_padding = Int32(head.preSkip)
        }
        parameters.pointee.sample_rate = Int32(clamping: track.sampleRate)
        parameters.pointee.frame_size = Int32(track.samplesPerFrame)
        av_channel_layout_default(&parameters.pointee.ch_layout, Int32(clamping: track.channelCount))
        try setExtradata(track.decoderConfiguration, on: parameters)
        return stream.pointee.index
    }

    /// Stores a copy of `bytes` as the extradata; `avformat_free_context` frees it.
    static func setExtradata(_ bytes: ByteBuffer, on parameters: UnsafeMutablePointer<AVCodecParameters>) throws(AVError) {
        let (pointer, size) = try Extradata.copy(bytes)
        parameters.pointee.extradata = pointer
        parameters.pointee.extradata_size = size
    }
}
