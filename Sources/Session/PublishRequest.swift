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
    /// Asks this publisher to publish elsewhere, at the given server URL (`rtmp://host/app`)
    /// or, without one, wherever its own URL now leads; nil when its protocol or client
    /// cannot be asked (only Enhanced RTMP v2 publishers that advertised the reconnect
    /// capability can). A draining node uses it.
    public var requestReconnect: ReconnectRequester?
    /// The session's bytes, counted by the protocol.
    public var traffic: SessionTraffic
    /// Ends the session with a reason its client is told; nil where the protocol has no
    /// way to tell (then `evict` closes it).
    public var kick: SessionKick?
    /// The id the session gets if it is accepted: policies (a webhook) name it before.
    public var sessionID: SessionID

    public init(
        path: StreamPath, query: StreamQuery, remoteAddress: String, transport: StreamProtocol, evict: @escaping @Sendable () -> Void,
        requestReconnect: ReconnectRequester? = nil, traffic: SessionTraffic = SessionTraffic(), kick: SessionKick? = nil,
        sessionID: SessionID = .make(.publish)
    ) {
        self.sessionID = sessionID
        self.path = path
        self.query = query
        self.remoteAddress = remoteAddress
        self.transport = transport
        self.evict = evict
        self.requestReconnect = requestReconnect
        self.traffic = traffic
        self.kick = kick
    }
}

/// Asks a publisher to reconnect, to the server URL given (`rtmp://host:port/app`) or, with
/// nil, to the one it used.
public typealias ReconnectRequester = @Sendable (_ serverURL: String?) -> Void

/// Who holds the stream, as its owner decides it (`PublishAdmission`: one publisher per
/// stream); the node's admission turns an accepted one into the publisher's session
/// (`PublishAnswer`).
public enum PublishDecision: Sendable {
    /// Publish into `hub` as publisher `id`.
    case accept(hub: StreamHub, id: StreamHub.PublisherID)
    case refuse(SessionRefusal)
}
