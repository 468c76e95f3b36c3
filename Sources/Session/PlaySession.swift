import Foundation
import Media

/// An accepted viewer: the handle the admission returns and the protocol keeps for the
/// session's life, with what it plays (the hub's rendition, whichever address it used).
/// The protocol calls `begin()` or `start()` as it starts serving, and `end(_:)` when the
/// viewer goes; the observers are told each once, in order, whoever calls.
public final class PlaySession: Sendable {
    public let id: SessionID
    /// What it plays: the hub the admission found for the address the viewer used.
    public let hub: StreamHub
    public var path: RenditionPath { hub.path }
    public let transport: StreamProtocol
    public let remoteAddress: String
    public let query: StreamQuery
    public let traffic: SessionTraffic?
    public let startedAt: Date
    private let kicker: SessionKick?
    private let sink: SessionEventSink
    private let life = SessionLife()

    public init(
        id: SessionID = .make(.play), hub: StreamHub, transport: StreamProtocol, remoteAddress: String,
        query: StreamQuery = StreamQuery(), traffic: SessionTraffic? = nil, kick: SessionKick? = nil,
        sink: @escaping SessionEventSink = { _ in }
    ) {
        self.id = id
        self.hub = hub
        self.transport = transport
        self.remoteAddress = remoteAddress
        self.query = query
        self.traffic = traffic
        self.startedAt = Date()
        self.kicker = kick
        self.sink = sink
    }

    public var endReason: SessionEndReason? { life.reason }
    public var hasEnded: Bool { life.hasEnded }
    public var canBeKicked: Bool { kicker != nil }

    /// The protocol starts serving the viewer: the observers are told, and this returns
    /// once they were.
    public func start() async {
        await life.start(sink, started: .playStarted(self), ended: .playEnded(self))
    }

    /// `start()` from a protocol's event loop: the observers are told in the background.
    public func begin() {
        life.begin(sink, started: .playStarted(self), ended: .playEnded(self))
    }

    /// The viewer is gone, for `reason` (unless a kick or a drain said why first); the
    /// observers are told in the background. Only the first call counts; before a start,
    /// nothing is told.
    public func end(_ reason: SessionEndReason) {
        life.end(reason, sink, ended: .playEnded(self))
    }

    /// An operator's kick: the protocol tells its client `reason` where it can, and ends
    /// the session (its end then carries this reason).
    public func kick(_ reason: String) {
        life.note(.kicked(reason))
        kicker?(reason)
    }

    /// Notes why the session is about to end, before the protocol closes it.
    public func noteEnding(_ reason: SessionEndReason) {
        life.note(reason)
    }
}
