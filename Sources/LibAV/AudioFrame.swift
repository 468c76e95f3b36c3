import CFFmpeg

/// Owns one audio `AVFrame`: decoded or resampled samples in reference-counted buffers.
/// Handing a frame from the decoder to the resampler passes the reference, not the samples.
///
/// Not Sendable: like every libav owner here it stays on the worker thread that made it.
public final class AudioFrame {
    let pointer: UnsafeMutablePointer<AVFrame>
    /// Presentation time of the first sample, in milliseconds (the stream's timeline).
    public internal(set) var presentationTime: Int64 = 0

    init() throws(AVError) {
        guard let pointer = av_frame_alloc() else {
            throw .call(operation: "av_frame_alloc", code: cffmpeg_averror_enomem())
        }
        self.pointer = pointer
    }

    deinit {
        var pointer: UnsafeMutablePointer<AVFrame>? = self.pointer
        av_frame_free(&pointer)
    }

    /// Samples per channel.
    public var sampleCount: Int { Int(pointer.pointee.nb_samples) }
    public var sampleRate: Int { Int(pointer.pointee.sample_rate) }
    public var channelCount: Int { Int(pointer.pointee.ch_layout.nb_channels) }
    /// The libav sample format (`AVSampleFormat` raw value).
    public var sampleFormat: Int32 { pointer.pointee.format }
}

@available(*, unavailable)
extension AudioFrame: Sendable {}
