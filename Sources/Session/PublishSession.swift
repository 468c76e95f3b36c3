import Foundation
import Media

/// An accepted publisher: the handle the admission returns and the protocol keeps for the
/// session's life. It owns what operators see of the session (id, path, protocol, address,
/// query, start time, bytes) and its end: `end(_:)` detaches the publisher from its hub and
/// tells the observers once, whoever calls it; `kick(_:)` asks the protocol to tell its
/// client why and close.
public final class PublishSession: Sendable {
    /// The session's printable id, for the admin API and the log.
    public let sessionID: SessionID
    public let path: StreamPath
    public let hub: StreamHub
    /// The hub's id for this publisher (`StreamHub.attachPublisher`).
    public let id: StreamHub.PublisherID
    public let transport: StreamProtocol
    public let remoteAddress: String
    /// Asks the publisher to move to another server (`PublishRequest.requestReconnect`).
    public let requestReconnect: ReconnectRequester?
    public let query: StreamQuery
    /// The session's bytes, as its protocol counts them; nil where it counts none (then the
    /// hub's count stands in).
    public let traffic: SessionTraffic?
    public let startedAt: Date
    /// For one track of a multitrack publisher (a rendition of `parent`'s stream): the
    /// publisher's own session, which the track's starts, ends and drains with. Nil for a
    /// publisher.
    public let parent: PublishSession?
    private let kicker: SessionKick?
    private let evict: (@Sendable () -> Void)?
    private let sink: SessionEventSink
    private let life = SessionLife()

    public init(
        sessionID: SessionID = .make(.publish), path: StreamPath, hub: StreamHub, id: StreamHub.PublisherID,
        transport: StreamProtocol, remoteAddress: String, requestReconnect: ReconnectRequester? = nil,
        query: StreamQuery = StreamQuery(), traffic: SessionTraffic? = nil, kick: SessionKick? = nil,
        evict: (@Sendable () -> Void)? = nil, parent: PublishSession? = nil, sink: @escaping SessionEventSink = { _ in }
    ) {
        self.sessionID = sessionID
        self.path = path
        self.hub = hub
        self.id = id
        self.transport = transport
        self.remoteAddress = remoteAddress
        self.requestReconnect = requestReconnect
        self.query = query
        self.traffic = traffic
        self.startedAt = Date()
        self.kicker = kick
        self.evict = evict
        self.parent = parent
        self.sink = sink
    }

    /// Why it ended, once it has (or why it is ending, once someone said).
    public var endReason: SessionEndReason? { life.reason }
    public var hasEnded: Bool { life.hasEnded }
    /// Whether the protocol can tell its client why it is kicked (or only close it).
    public var canBeKicked: Bool { kicker != nil || evict != nil }

    /// Tells the observers the session started, once; the admission calls it before it
    /// answers the publisher.
    public func start() async {
        await life.start(sink, started: .publishStarted(self), ended: .publishEnded(self))
    }

    /// `start()` from where nothing can wait (an admission that answers at once): the
    /// observers are told in the background, before the end whenever that comes.
    public func begin() {
        life.begin(sink, started: .publishStarted(self), ended: .publishEnded(self))
    }

    /// The session is over, for `reason` (unless a kick, a takeover or a drain said why
    /// first): the publisher is detached from its hub at once, and the observers are told in
    /// the background. Only the first call counts.
    public func end(_ reason: SessionEndReason) {
        hub.detachPublisher(id: id)
        life.end(reason, sink, ended: .publishEnded(self))
    }

    /// Notes why the session is about to end (a takeover: the hub closes the old publisher
    /// through its protocol, which then ends the session).
    public func noteEnding(_ reason: SessionEndReason) {
        life.note(reason)
    }

    /// An operator's kick: the protocol tells its client `reason` where it can, and closes;
    /// its close ends the session, with this reason.
    public func kick(_ reason: String) {
        life.note(.kicked(reason))
        if let kicker {
            kicker(reason)
        } else {
            evict?()
            end(.kicked(reason))
        }
    }
}
