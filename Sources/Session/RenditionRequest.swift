import Media

/// A rendition the node made itself asks to be published: a transcoder's rung (and, later,
/// one track of a multitrack publisher). Its hub exists and has its publisher; the
/// admission makes it a session, so observers (HLS, metrics, the session table) see it as
/// they see any publisher. Its source passed the admission already: no policy is asked.
public struct RenditionRequest: Sendable {
    public var hub: StreamHub
    public var publisherID: StreamHub.PublisherID
    public var transport: StreamProtocol
    /// What made it, for the session's address column (`transcoder`).
    public var origin: String

    public init(hub: StreamHub, publisherID: StreamHub.PublisherID, transport: StreamProtocol, origin: String) {
        self.hub = hub
        self.publisherID = publisherID
        self.transport = transport
        self.origin = origin
    }
}
