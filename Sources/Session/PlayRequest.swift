import Media

/// A client asks to play a stream or one of its rungs, over any protocol.
public struct PlayRequest: Sendable {
    /// The stream or rung asked for (`app/name`, `app/name/rung`, or an old-style `app/name_rung`).
    public var path: RequestedRendition
    public var query: StreamQuery
    /// `host:port` of the peer, or empty where the transport does not say.
    public var remoteAddress: String
    public var transport: StreamProtocol

    public init(path: RequestedRendition, query: StreamQuery, remoteAddress: String, transport: StreamProtocol) {
        self.path = path
        self.query = query
        self.remoteAddress = remoteAddress
        self.transport = transport
    }
}

public enum PlayDecision: Sendable {
    case accept(hub: StreamHub)
    case refuse(SessionRefusal)
}
