import CFFmpeg

/// A libswresample conversion of decoded audio to planar float at the AAC encoder's rate
/// and channel count.
///
/// The context is built for the format, rate and layout of the frames it sees and rebuilt
/// when they change (a decoder reopened for a reconnecting publisher). Samples the
/// resampler holds back for its filter are carried into the next call; the output's
/// presentation time is the input's, which is exact to well under a millisecond.
///
/// Owns its `SwrContext` and frees it in `deinit`; not Sendable.
public final class AudioResampler {
    public let sampleRate: Int
    public let channelCount: Int
    private var context: OpaquePointer?
    private var source: (format: Int32, rate: Int32, channels: Int32)?

    public init(sampleRate: Int, channelCount: Int) throws(AVError) {
        guard sampleRate > 0, sampleRate <= 384_000, channelCount > 0, channelCount <= 8 else {
            throw .call(operation: "AudioResampler(\(sampleRate) Hz, \(channelCount) ch)", code: cffmpeg_averror_einval())
        }
        self.sampleRate = sampleRate
        self.channelCount = channelCount
    }

    deinit {
        swr_free(&context)
    }

    /// `input` as planar float at `sampleRate` with `channelCount` channels.
    public func convert(_ input: AudioFrame) throws(AVError) -> AudioFrame {
        let frame = input.pointer
        if frame.pointee.ch_layout.order == AV_CHANNEL_ORDER_UNSPEC {
            // Some decoders (Speex) only count channels; the resampler needs their layout,
            // and compares it with the one it was built for.
            let channels = max(1, frame.pointee.ch_layout.nb_channels)
            av_channel_layout_uninit(&frame.pointee.ch_layout)
            av_channel_layout_default(&frame.pointee.ch_layout, channels)
        }
        let key = (frame.pointee.format, frame.pointee.sample_rate, frame.pointee.ch_layout.nb_channels)
        if context == nil || source.map({ $0 != key }) ?? true {
            try rebuild(for: frame)
            source = key
        }
        let output = try AudioFrame()
        let out = output.pointer
        out.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
        out.pointee.sample_rate = Int32(sampleRate)
        av_channel_layout_default(&out.pointee.ch_layout, Int32(channelCount))
        // With no buffers in `out`, libswresample sizes them for this frame's samples at the
        // new rate plus what its filter held back.
        try AVError.check(swr_convert_frame(context, out, frame), "swr_convert_frame")
        output.presentationTime = input.presentationTime
        return output
    }

    private func rebuild(for frame: UnsafeMutablePointer<AVFrame>) throws(AVError) {
        swr_free(&context)
        var outputLayout = AVChannelLayout()
        av_channel_layout_default(&outputLayout, Int32(channelCount))
        defer { av_channel_layout_uninit(&outputLayout) }
        var inputLayout = AVChannelLayout()
        try AVError.check(av_channel_layout_copy(&inputLayout, &frame.pointee.ch_layout), "av_channel_layout_copy")
        defer { av_channel_layout_uninit(&inputLayout) }
        var created: OpaquePointer?
        try AVError.check(
            swr_alloc_set_opts2(
                &created,
                &outputLayout, AV_SAMPLE_FMT_FLTP, Int32(sampleRate),
                &inputLayout, AVSampleFormat(rawValue: frame.pointee.format), frame.pointee.sample_rate,
                0, nil
            ),
            "swr_alloc_set_opts2"
        )
        context = created
        try AVError.check(swr_init(context), "swr_init")
    }
}

@available(*, unavailable)
extension AudioResampler: Sendable {}
