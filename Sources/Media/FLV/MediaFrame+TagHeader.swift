import NIOCore

extension MediaFrame {
    /// The video tag header: the one parsed where the frame was made, or parsed now for a
    /// frame built from flags alone. Call it on video frames only.
    public func videoTagHeader() throws(FLVError) -> VideoTagHeader {
        if case .video(let header) = tagHeader {
            return header
        }
        return try VideoTagHeader(from: payload)
    }

    /// The audio tag header: the one parsed where the frame was made, or parsed now for a
    /// frame built from flags alone. Call it on audio frames only.
    public func audioTagHeader() throws(FLVError) -> AudioTagHeader {
        if case .audio(let header) = tagHeader {
            return header
        }
        return try AudioTagHeader(from: payload)
    }

    /// PTS − DTS in milliseconds: a video frame's composition time, 0 for anything else
    /// (and for a video frame whose header does not parse).
    public var compositionTime: Int32 {
        guard kind == .video else { return 0 }
        return (try? videoTagHeader())?.compositionTime ?? 0
    }

    /// Presentation timestamp (PTS) in milliseconds on the stream's timeline.
    public var presentationTimestamp: Int64 {
        timestamp + Int64(compositionTime)
    }

    /// The codec data from `offset` on (a header's `headerLength`): the decoder
    /// configuration record, NAL units or raw AAC, sharing the payload's storage; nil
    /// when the payload is shorter than `offset`.
    public func codecData(from offset: Int) -> ByteBuffer? {
        guard offset >= 0, payload.readableBytes >= offset else { return nil }
        return payload.getSlice(at: payload.readerIndex + offset, length: payload.readableBytes - offset)
    }
}
