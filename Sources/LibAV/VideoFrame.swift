import CFFmpeg

/// Owns one `AVFrame`: a decoded or scaled picture whose planes are reference-counted
/// `AVBuffer`s. Passing a picture on (decoder → scaler → encoder) hands over or adds a
/// reference (`av_frame_move_ref` / `av_frame_ref`), never a copy of the pixels.
///
/// Not Sendable: like every libav owner here it stays on the worker thread that made it.
public final class VideoFrame {
    let pointer: UnsafeMutablePointer<AVFrame>
    /// Presentation time in milliseconds (the stream's timeline).
    public internal(set) var presentationTime: Int64
    /// True when the source frame this picture came from was a keyframe (an IDR/IRAP the
    /// publisher marked as such): the encoders force a keyframe on it.
    public internal(set) var isSourceKeyframe: Bool

    /// An empty frame (no buffers).
    init() throws(AVError) {
        guard let pointer = av_frame_alloc() else {
            throw .call(operation: "av_frame_alloc", code: cffmpeg_averror_enomem())
        }
        self.pointer = pointer
        self.presentationTime = 0
        self.isSourceKeyframe = false
    }

    deinit {
        var pointer: UnsafeMutablePointer<AVFrame>? = self.pointer
        av_frame_free(&pointer)
    }

    /// A new owner holding another reference to this frame's buffers (no pixel copy).
    public func reference() throws(AVError) -> VideoFrame {
        let copy = try VideoFrame()
        try AVError.check(av_frame_ref(copy.pointer, pointer), "av_frame_ref")
        copy.presentationTime = presentationTime
        copy.isSourceKeyframe = isSourceKeyframe
        return copy
    }

    public var width: Int { Int(pointer.pointee.width) }
    public var height: Int { Int(pointer.pointee.height) }
    /// The libav pixel format (`AVPixelFormat` raw value).
    public var pixelFormat: AVPixelFormat { AVPixelFormat(rawValue: pointer.pointee.format) }
    /// The libav name of the pixel format (`yuv420p`, `nv12`, …).
    public var pixelFormatName: String {
        av_get_pix_fmt_name(pixelFormat).map { String(cString: $0) } ?? "unknown"
    }
    /// The address of the first plane: two frames sharing buffers have the same one.
    var firstPlane: UnsafeMutableRawPointer? { pointer.pointee.data.0.map(UnsafeMutableRawPointer.init) }
    /// True when the decoder flagged the picture as damaged (concealed errors).
    public var isCorrupt: Bool { pointer.pointee.flags & AV_FRAME_FLAG_CORRUPT != 0 || pointer.pointee.decode_error_flags != 0 }
}

@available(*, unavailable)
extension VideoFrame: Sendable {}
