import Media

/// What happens to sessions, for observers: the coordinator's announcement, the bus
/// publication, HLS segmenting, metrics; webhooks and recording next. Observers are told in
/// order. `publishStarted` comes after the admission accepted and before the protocol
/// answers the publisher, so a stream is on the bus and segmented from its first frame;
/// `playStarted` as the protocol starts serving the viewer.
public enum SessionEvent: Sendable {
    /// A publisher was accepted into `hub` (a new stream, or one resumed within its grace).
    case publishStarted(PublishSession)
    /// That publisher left: it disconnected, unpublished, was evicted or kicked. The stream
    /// itself lives on through its grace period.
    case publishEnded(PublishSession)
    /// A viewer was accepted.
    case playStarted(PlaySession)
    /// That viewer left.
    case playEnded(PlaySession)
}

/// An accepted publisher. Its start and end are told with two values of this type; they
/// name the same session by `path` and the hub's publisher `id`.
public struct PublishSession: Sendable {
    public let path: StreamPath
    public let hub: StreamHub
    public let id: StreamHub.PublisherID
    public let transport: StreamProtocol
    public let remoteAddress: String
    /// Asks the publisher to move to another server (`PublishRequest.requestReconnect`).
    public let requestReconnect: ReconnectRequester?
    /// Set where the session starts (`publishStarted`), from its `PublishRequest`.
    public let query: StreamQuery
    public let traffic: SessionTraffic?
    public let kick: SessionKick?

    public init(
        path: StreamPath, hub: StreamHub, id: StreamHub.PublisherID, transport: StreamProtocol, remoteAddress: String,
        requestReconnect: ReconnectRequester? = nil, query: StreamQuery = StreamQuery(), traffic: SessionTraffic? = nil, kick: SessionKick? = nil
    ) {
        self.path = path
        self.hub = hub
        self.id = id
        self.transport = transport
        self.remoteAddress = remoteAddress
        self.requestReconnect = requestReconnect
        self.query = query
        self.traffic = traffic
        self.kick = kick
    }
}

/// An accepted viewer: what it plays (the hub's rendition, whichever address it used). The
/// protocol tells its start and end with values that share `id`.
public struct PlaySession: Sendable {
    public let id: SessionID
    public let path: RenditionPath
    public let transport: StreamProtocol
    public let remoteAddress: String
    public let query: StreamQuery
    public let traffic: SessionTraffic?
    public let kick: SessionKick?

    public init(
        id: SessionID = .make(.play), path: RenditionPath, transport: StreamProtocol, remoteAddress: String,
        query: StreamQuery = StreamQuery(), traffic: SessionTraffic? = nil, kick: SessionKick? = nil
    ) {
        self.id = id
        self.path = path
        self.transport = transport
        self.remoteAddress = remoteAddress
        self.query = query
        self.traffic = traffic
        self.kick = kick
    }
}

/// Something that wants to know about sessions. Called from the session's own task, one
/// event at a time per session; an observer that has slow work to do (an HTTP hook) must
/// hand it off rather than hold the publisher's admission.
public protocol SessionObserver: Sendable {
    func observe(_ event: SessionEvent) async
}
