/// The wire formats a hub serialises frames into: each frame at most once per format that
/// has a subscriber, the same bytes for every viewer of that format.
public enum OutputFormat: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// A complete FLV tag (header, body, PreviousTagSize): HTTP-FLV viewers.
    case flvTag
    /// RTMP chunks at the shared conventions (`RTMPChunkSerializer`): RTMP viewers.
    case rtmpChunks

    public var description: String {
        switch self {
        case .flvTag: "flv-tag"
        case .rtmpChunks: "rtmp-chunks"
        }
    }
}
