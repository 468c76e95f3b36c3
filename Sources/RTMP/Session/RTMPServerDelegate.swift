import Media

/// What an RTMP client asked to publish.
public struct RTMPPublishRequest: Sendable {
    public var path: StreamPath
    /// The query string after `?` in the publish name (`demo?key=abc`), where stream keys
    /// and tokens travel. Empty when absent.
    public var query: String
    /// `live`, `record` or `append`, as the client sent it.
    public var publishType: String
    public var remoteAddress: String
    /// Closes this publisher; called when a later publisher takes the stream over.
    public var evict: @Sendable () -> Void
}

public enum RTMPPublishDecision: Sendable {
    /// Publish into `hub` as publisher `id`.
    case accept(hub: StreamHub, id: StreamHub.PublisherID)
    /// Refuse with an onStatus error (`NetStream.Publish.BadName`, ...) and close.
    case reject(code: StatusCode, description: String)
}

/// What an RTMP client asked to play.
public struct RTMPPlayRequest: Sendable {
    public var path: StreamPath
    public var query: String
    public var remoteAddress: String
}

public enum RTMPPlayDecision: Sendable {
    case accept(hub: StreamHub)
    /// The stream does not exist (`NetStream.Play.StreamNotFound`).
    case notFound
    case reject(code: StatusCode, description: String)
}

/// The policy behind an RTMP listener: who may publish and play what. The Ingest role
/// answers publish, the Relay role answers play; `--role all` answers both.
public protocol RTMPServerDelegate: Sendable {
    func publish(_ request: RTMPPublishRequest) async -> RTMPPublishDecision
    /// The publisher `id` of `path` disconnected or unpublished.
    func unpublished(_ path: StreamPath, id: StreamHub.PublisherID) async
    func play(_ request: RTMPPlayRequest) async -> RTMPPlayDecision
}

/// A delegate that answers without waiting: a fixed policy, a test, a fuzz target. The
/// connection handler calls it on the connection's event loop, and applies a publish or play
/// answer on the next tick, as it applies an async delegate's answer when its Task ends:
/// messages that arrive in between are held the same way. No Task is involved, which is what
/// lets a connection run on an `EmbeddedChannel` (an `EmbeddedEventLoop` cannot take an answer
/// from another thread) and makes it replay the same way every time.
public protocol RTMPImmediateServerDelegate: RTMPServerDelegate {
    func publishImmediately(_ request: RTMPPublishRequest) -> RTMPPublishDecision
    func playImmediately(_ request: RTMPPlayRequest) -> RTMPPlayDecision
    func unpublishedImmediately(_ path: StreamPath, id: StreamHub.PublisherID)
}

extension RTMPImmediateServerDelegate {
    public func publish(_ request: RTMPPublishRequest) async -> RTMPPublishDecision {
        publishImmediately(request)
    }

    public func play(_ request: RTMPPlayRequest) async -> RTMPPlayDecision {
        playImmediately(request)
    }

    public func unpublished(_ path: StreamPath, id: StreamHub.PublisherID) async {
        unpublishedImmediately(path, id: id)
    }
}
