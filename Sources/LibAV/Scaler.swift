import CFFmpeg

/// A libswscale conversion from decoded pictures of one size and pixel format to
/// `width`×`height` yuv420p, the input of the H.264 encoders.
///
/// The scaler owns its `SwsContext` and one output `VideoFrame` that every call writes
/// into: once an encoder has taken the picture (libx264 copies it into its own lookahead
/// buffers inside `avcodec_send_frame`), the buffers are writable again and are reused, so
/// a steady stream allocates nothing per frame. Should a consumer still hold a reference,
/// `av_frame_make_writable` gives the output fresh buffers instead of overwriting them.
///
/// A source already at the target size and format is passed through as another reference
/// to the decoder's buffers, without touching libswscale.
///
/// The context is recreated when the source size or format changes (a publisher changing
/// resolution). Not Sendable; stays on one worker thread.
public final class Scaler {
    /// libswscale's interpolation. `bicubic` is the ffmpeg CLI's default for `scale`.
    public enum Algorithm: Sendable {
        case fastBilinear
        case bilinear
        case bicubic

        var flags: Int32 {
            switch self {
            case .fastBilinear: SWS_FAST_BILINEAR
            case .bilinear: SWS_BILINEAR
            case .bicubic: SWS_BICUBIC
            }
        }
    }

    public let width: Int
    public let height: Int
    public let algorithm: Algorithm
    private static let outputFormat = AV_PIX_FMT_YUV420P

    private var context: OpaquePointer?
    private var source: (width: Int32, height: Int32, format: Int32)?
    private let output: VideoFrame

    /// - Throws: `.invalidPicture` unless both dimensions are positive and even (4:2:0
    ///   chroma needs even sizes; the encoders reject odd ones).
    public init(width: Int, height: Int, algorithm: Algorithm = .bicubic) throws(AVError) {
        guard width > 0, height > 0, width % 2 == 0, height % 2 == 0, width <= 16384, height <= 16384 else {
            throw .invalidPicture(width: width, height: height)
        }
        self.width = width
        self.height = height
        self.algorithm = algorithm
        self.output = try VideoFrame()
    }

    deinit {
        sws_freeContext(context)
    }

    /// The picture at the target size in yuv420p, carrying the source's PTS and keyframe
    /// flag. The returned frame is the scaler's own output (valid until the next call) or,
    /// for a pass-through, a new reference to the source's buffers.
    public func scale(_ frame: VideoFrame) throws(AVError) -> VideoFrame {
        let input = frame.pointer
        guard input.pointee.width > 0, input.pointee.height > 0, input.pointee.format >= 0 else {
            throw .invalidPicture(width: Int(input.pointee.width), height: Int(input.pointee.height))
        }
        if Int(input.pointee.width) == width, Int(input.pointee.height) == height,
           input.pointee.format == Self.outputFormat.rawValue {
            return try frame.reference()
        }
        let key = (input.pointee.width, input.pointee.height, input.pointee.format)
        if context == nil || source.map({ $0 != key }) ?? true {
            sws_freeContext(context)
            context = nil
            guard let created = sws_getContext(
                key.0, key.1, AVPixelFormat(rawValue: key.2),
                Int32(width), Int32(height), Self.outputFormat,
                algorithm.flags, nil, nil, nil
            ) else {
                throw .invalidPicture(width: Int(key.0), height: Int(key.1))
            }
            context = created
            source = key
        }
        let out = output.pointer
        if out.pointee.buf.0 == nil {
            out.pointee.width = Int32(width)
            out.pointee.height = Int32(height)
            out.pointee.format = Self.outputFormat.rawValue
            try AVError.check(av_frame_get_buffer(out, 0), "av_frame_get_buffer")
        } else {
            try AVError.check(av_frame_make_writable(out), "av_frame_make_writable")
        }
        // The data/linesize arrays are C fixed-size arrays (Swift tuples) inside the frames;
        // their addresses are stable because the frames live in libav's memory.
        let rows = Self.planes(of: input) { sourceData, sourceStrides in
            Self.planes(of: out) { destinationData, destinationStrides in
                sws_scale(
                    context, UnsafeRawPointer(sourceData).assumingMemoryBound(to: UnsafePointer<UInt8>?.self), sourceStrides,
                    0, input.pointee.height, destinationData, destinationStrides
                )
            }
        }
        try AVError.check(rows, "sws_scale")
        av_frame_copy_props(out, input)
        output.presentationTime = frame.presentationTime
        output.isSourceKeyframe = frame.isSourceKeyframe
        return output
    }

    /// Calls `body` with the frame's plane pointers and line sizes as C arrays.
    private static func planes<Result>(
        of frame: UnsafeMutablePointer<AVFrame>,
        _ body: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, UnsafeMutablePointer<Int32>) -> Result
    ) -> Result {
        withUnsafeMutablePointer(to: &frame.pointee.data) { data in
            withUnsafeMutablePointer(to: &frame.pointee.linesize) { linesize in
                data.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: Int(AV_NUM_DATA_POINTERS)) { planes in
                    linesize.withMemoryRebound(to: Int32.self, capacity: Int(AV_NUM_DATA_POINTERS)) { strides in
                        body(planes, strides)
                    }
                }
            }
        }
    }
}

@available(*, unavailable)
extension Scaler: Sendable {}
