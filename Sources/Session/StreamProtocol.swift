/// The wire protocol a session arrived over. Admission, logs and (later) hooks see it; the
/// publish and play state machines do not depend on it.
public enum StreamProtocol: String, Sendable, Hashable, CustomStringConvertible {
    case rtmp
    case httpFLV = "http-flv"
    case hls
    case srt
    /// A stream the node pulls from another server and publishes as its own (a static pull).
    case pull
    /// A rendition a transcoder makes from a source (a rung of its ladder).
    case transcode
    /// The node pushing one of its streams to another server (`forwards`): a viewer of it.
    case forward

    public var description: String { rawValue }
}
