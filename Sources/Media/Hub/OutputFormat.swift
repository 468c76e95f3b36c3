/// The wire formats a hub serialises frames into: each frame at most once per format that
/// has a subscriber, the same bytes for every viewer of that format.
public enum OutputFormat: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// A complete FLV tag (header, body, PreviousTagSize): HTTP-FLV viewers.
    case flvTag
    /// RTMP chunks at the shared conventions (`RTMPChunkSerializer`): RTMP viewers.
    case rtmpChunks
    /// A complete FLV tag framed as one HTTP/1.1 chunk (`HTTPFLVChunkSerializer`): HTTP-FLV
    /// viewers, whose connections write these bytes to the socket as they are.
    case httpFLVChunk

    public var description: String {
        switch self {
        case .flvTag: "flv-tag"
        case .rtmpChunks: "rtmp-chunks"
        case .httpFLVChunk: "http-flv-chunk"
        }
    }
}
