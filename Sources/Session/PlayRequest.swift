import Media

/// A client asks to play a stream or one of its rungs, over any protocol.
public struct PlayRequest: Sendable {
    /// The stream or rung asked for (`app/name`, `app/name/rung`, or an old-style `app/name_rung`).
    public var path: RequestedRendition
    public var query: StreamQuery
    /// `host:port` of the peer, or empty where the transport does not say.
    public var remoteAddress: String
    public var transport: StreamProtocol
    /// The session's bytes, counted by the protocol.
    public var traffic: SessionTraffic
    /// Ends the session with a reason its client is told where the protocol can.
    public var kick: SessionKick?
    /// The id the session gets if it is accepted (a protocol that needs it before, HLS for
    /// its URIs, makes it).
    public var sessionID: SessionID
    /// The codecs the client decodes, where its protocol says (RTMP's `connect`); nil where
    /// it does not (HTTP-FLV, HLS, SRT), and the stream is served as it is.
    public var codecs: ClientCodecs?

    public init(
        path: RequestedRendition, query: StreamQuery, remoteAddress: String, transport: StreamProtocol,
        traffic: SessionTraffic = SessionTraffic(), kick: SessionKick? = nil, sessionID: SessionID = .make(.play),
        codecs: ClientCodecs? = nil
    ) {
        self.path = path
        self.query = query
        self.remoteAddress = remoteAddress
        self.transport = transport
        self.traffic = traffic
        self.kick = kick
        self.sessionID = sessionID
        self.codecs = codecs
    }
}

/// Where a viewer is served from, as the playback decides it (`Playback`); the node's
/// admission turns an accepted one into the viewer's session (`PlayAnswer`).
public enum PlayDecision: Sendable {
    case accept(hub: StreamHub)
    case refuse(SessionRefusal)
}
