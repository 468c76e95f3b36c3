import NIOCore

extension MediaFrame {
    /// A frame whose tag header is parsed from the payload, once: it travels with the frame
    /// as `tagHeader`, and the `isKeyframe` and `isSequenceHeader` flags are read from it.
    ///
    /// - Video: `isKeyframe` from the frame type (1 keyframe, 4 generated keyframe), so a
    ///   sequence header sent as `0x17 0x00` is both; `isSequenceHeader` from the packet type.
    /// - Audio: `isSequenceHeader` for an AAC sequence header (`AF 00`) or an enhanced
    ///   SequenceStart; audio is never a keyframe.
    /// - Script data: neither.
    ///
    /// Throws `FLVError.emptyPayload` for an empty payload of any kind, and the header
    /// parsers' errors for malformed audio/video headers.
    public static func classified(kind: MediaKind, timestamp: Int64, payload: ByteBuffer) throws(FLVError) -> MediaFrame {
        guard payload.readableBytes > 0 else {
            throw .emptyPayload(kind)
        }
        switch kind {
        case .video:
            let header = try VideoTagHeader(from: payload)
            return MediaFrame(timestamp: timestamp, video: header, payload: payload)
        case .audio:
            let header = try AudioTagHeader(from: payload)
            return MediaFrame(timestamp: timestamp, audio: header, payload: payload)
        case .script:
            return MediaFrame(kind: kind, timestamp: timestamp, payload: payload)
        }
    }
}
