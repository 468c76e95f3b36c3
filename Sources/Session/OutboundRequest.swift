import Media

/// The node reads one of its streams to push it to another server: a forward to a CDN, a
/// platform or another node. The stream passed the admission as it was published and the
/// operator configured the push, so no policy is asked; the admission makes it a viewing
/// session so that observers (metrics, the session table) see it as any viewer, with the
/// target as its address, and an operator can kick it.
public struct OutboundRequest: Sendable {
    public var hub: StreamHub
    public var transport: StreamProtocol
    /// Where the stream goes, with any key redacted (`rtmp://host:port/app/name`).
    public var target: String
    /// The session's bytes, counted by the pusher.
    public var traffic: SessionTraffic
    /// Drops the push connection (a configured push connects again after its backoff).
    public var kick: SessionKick?

    public init(hub: StreamHub, transport: StreamProtocol, target: String, traffic: SessionTraffic = SessionTraffic(), kick: SessionKick? = nil) {
        self.hub = hub
        self.transport = transport
        self.target = target
        self.traffic = traffic
        self.kick = kick
    }
}
