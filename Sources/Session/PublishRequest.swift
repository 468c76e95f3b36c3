import Media

/// A client asks to publish a stream, over any protocol: the one request the admission
/// path (`SessionAdmission`) decides on. RTMP makes one from `publish`; SRT will from its
/// stream id, an edge's pull from its upstream.
public struct PublishRequest: Sendable {
    public var path: StreamPath
    public var query: StreamQuery
    /// `host:port` of the peer.
    public var remoteAddress: String
    public var transport: StreamProtocol
    /// Closes this publisher; called when a later publisher takes the stream over.
    public var evict: @Sendable () -> Void

    public init(path: StreamPath, query: StreamQuery, remoteAddress: String, transport: StreamProtocol, evict: @escaping @Sendable () -> Void) {
        self.path = path
        self.query = query
        self.remoteAddress = remoteAddress
        self.transport = transport
        self.evict = evict
    }
}

public enum PublishDecision: Sendable {
    /// Publish into `hub` as publisher `id`.
    case accept(hub: StreamHub, id: StreamHub.PublisherID)
    case refuse(SessionRefusal)
}
