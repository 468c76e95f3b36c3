import Media
import NIOCore

/// The one admission path for every protocol: who may publish and play what. A protocol
/// codec (RTMP, HTTP-FLV, HLS; SRT and edges' pulls next) turns its wire requests into
/// `PublishRequest`s and `PlayRequest`s and applies the answers; the policy (one publisher
/// per stream, stream keys, capacities, and later hooks and play tokens) lives behind this
/// protocol, in one place per node (`NodeAdmission`).
///
/// An accepted request comes back as the session's handle (`PublishSession`,
/// `PlaySession`), which the protocol keeps and ends; the handle, not the protocol, tells
/// the observers when the session starts and ends.
public protocol SessionAdmission: Sendable {
    /// A publisher's answer. An accepted publisher's session has started (its observers
    /// were told) before this returns.
    func publish(_ request: PublishRequest) async -> PublishAnswer
    /// A viewer's answer. The protocol starts the session as it starts serving.
    func play(_ request: PlayRequest) async -> PlayAnswer
    /// A rendition the node made (a transcoder's rung) becomes a publishing session.
    func publishRendition(_ request: RenditionRequest) async -> PublishAnswer
    /// One track of an admitted multitrack publisher becomes rendition `rendition` of its
    /// stream, with a hub of its own, as a session whose parent is the publisher's.
    func publishTrack(of publisher: PublishSession, rendition: String) async -> PublishAnswer
    /// The node reading one of its own streams to push it elsewhere (a forward) becomes a
    /// viewing session. The protocol starts and ends it, as a viewer's.
    func playOutbound(_ request: OutboundRequest) async -> PlayAnswer
    /// `publish` for a protocol on an event loop: the answer completes on `eventLoop`. By
    /// default the decision runs in a Task; an admission that answers without waiting (a
    /// fixed policy, a fuzz target) answers on the loop's next tick, so a connection on an
    /// `EmbeddedChannel` replays the same way every time.
    func publish(_ request: PublishRequest, on eventLoop: any EventLoop) -> EventLoopFuture<PublishAnswer>
    func play(_ request: PlayRequest, on eventLoop: any EventLoop) -> EventLoopFuture<PlayAnswer>
    func publishTrack(of publisher: PublishSession, rendition: String, on eventLoop: any EventLoop) -> EventLoopFuture<PublishAnswer>
    /// A refusal of `request` the admission is sure of without waiting for anything (no
    /// hook, no coordinator, no key fetch): a missing key or token, an HMAC token that does
    /// not match, a draining node. nil when nothing refuses it at once, which is not an
    /// acceptance: `publish` still decides. For a protocol whose handshake cannot wait and
    /// whose client is told only in the handshake (SRT's listen callback, on libsrt's
    /// thread), so that the usual mistakes are answered with a code on the first attempt.
    /// Never blocks; a refusal is counted (`EarlyRefusal.count`) and logged by the protocol
    /// (with a rate limit: a handshake may cost its sender little).
    func refusalWithoutWaiting(_ request: PublishRequest) -> EarlyRefusal?
    func refusalWithoutWaiting(_ request: PlayRequest) -> EarlyRefusal?
    /// `refusalWithoutWaiting`, and besides what the admission can refuse by asking someone
    /// without consequences: a stream key the coordinator checks, a JWT's signature (a JWKS
    /// that may need fetching). It calls no hook, holds no slot, evicts no publisher and
    /// asks no other node of the cluster: nil is still not an acceptance, and `publish`
    /// decides as before. For SRT's handshake, which waits for it only briefly (libsrt's
    /// thread carries every caller's packets), so that a wrong key or a bad JWT is answered
    /// with a code on the first attempt. Neither this nor `refusalWithoutWaiting` counts
    /// its refusal: the protocol calls `EarlyRefusal.count` when it answers with it.
    func refusalWithoutSideEffects(_ request: PublishRequest) async -> EarlyRefusal?
    func refusalWithoutSideEffects(_ request: PlayRequest) async -> EarlyRefusal?
    /// Whether `refusalWithoutSideEffects` would ask anyone for `request` (a key not
    /// answered for yet, a JWT): where it would not, it refuses no more than
    /// `refusalWithoutWaiting`, and a handshake does not wait for it.
    func asksWithoutSideEffects(_ request: PublishRequest) -> Bool
    func asksWithoutSideEffects(_ request: PlayRequest) -> Bool
}

extension SessionAdmission {
    /// An admission that hands out no hubs of its own (a test's) takes no renditions.
    public func publishRendition(_ request: RenditionRequest) async -> PublishAnswer {
        .refused(.unavailable("renditions are not published here"))
    }

    /// An admission that hands out no hubs of its own (a test's) takes no tracks.
    public func publishTrack(of publisher: PublishSession, rendition: String) async -> PublishAnswer {
        .refused(.unavailable("tracks are not published here"))
    }

    public func publishTrack(of publisher: PublishSession, rendition: String, on eventLoop: any EventLoop) -> EventLoopFuture<PublishAnswer> {
        eventLoop.makeFutureWithTask { await self.publishTrack(of: publisher, rendition: rendition) }
    }

    /// An admission that keeps no sessions of its own (a test's) lists no forwards.
    public func playOutbound(_ request: OutboundRequest) async -> PlayAnswer {
        .refused(.unavailable("outbound sessions are not kept here"))
    }

    public func publish(_ request: PublishRequest, on eventLoop: any EventLoop) -> EventLoopFuture<PublishAnswer> {
        eventLoop.makeFutureWithTask { await self.publish(request) }
    }

    /// An admission that cannot tell without waiting refuses nothing at once.
    public func refusalWithoutWaiting(_ request: PublishRequest) -> EarlyRefusal? { nil }
    public func refusalWithoutWaiting(_ request: PlayRequest) -> EarlyRefusal? { nil }

    /// An admission that asks no one without consequences refuses what it refuses at once.
    public func refusalWithoutSideEffects(_ request: PublishRequest) async -> EarlyRefusal? { refusalWithoutWaiting(request) }
    public func refusalWithoutSideEffects(_ request: PlayRequest) async -> EarlyRefusal? { refusalWithoutWaiting(request) }
    public func asksWithoutSideEffects(_ request: PublishRequest) -> Bool { false }
    public func asksWithoutSideEffects(_ request: PlayRequest) -> Bool { false }

    public func play(_ request: PlayRequest, on eventLoop: any EventLoop) -> EventLoopFuture<PlayAnswer> {
        eventLoop.makeFutureWithTask { await self.play(request) }
    }
}

/// A refusal before the session is admitted (`SessionAdmission.refusalWithoutWaiting`,
/// `refusalWithoutSideEffects`): what the client is told, and the reason for the log (which
/// may say more than the client is told).
public struct EarlyRefusal: Sendable {
    public var refusal: SessionRefusal
    public var reason: String
    /// Counts the refusal as the full path's would be counted. The protocol calls it when it
    /// answers the client with this refusal: an answer that came too late for a handshake
    /// is not counted here, the full admission counts its own.
    public var count: @Sendable () -> Void

    public init(_ refusal: SessionRefusal, reason: String, count: @escaping @Sendable () -> Void = {}) {
        self.refusal = refusal
        self.reason = reason
        self.count = count
    }
}

public enum PublishAnswer: Sendable {
    case accepted(PublishSession)
    case refused(SessionRefusal)
}

public enum PlayAnswer: Sendable {
    case accepted(PlaySession)
    case refused(SessionRefusal)
}

/// An admission that answers without waiting: a fixed policy, a test, a fuzz target. A
/// protocol on an event loop gets its answer on the loop's next tick, without a Task, so a
/// connection on an `EmbeddedChannel` replays the same way every time.
public protocol ImmediateSessionAdmission: SessionAdmission {
    func publishImmediately(_ request: PublishRequest) -> PublishAnswer
    func playImmediately(_ request: PlayRequest) -> PlayAnswer
    /// By default, no tracks (as `SessionAdmission.publishTrack`). An immediate admission
    /// that takes tracks implements this one: protocols on an event loop ask it, not the
    /// async `publishTrack`.
    func publishTrackImmediately(of publisher: PublishSession, rendition: String) -> PublishAnswer
}

extension ImmediateSessionAdmission {
    public func publish(_ request: PublishRequest) async -> PublishAnswer {
        publishImmediately(request)
    }

    public func play(_ request: PlayRequest) async -> PlayAnswer {
        playImmediately(request)
    }

    public func publish(_ request: PublishRequest, on eventLoop: any EventLoop) -> EventLoopFuture<PublishAnswer> {
        eventLoop.submit { self.publishImmediately(request) }
    }

    public func play(_ request: PlayRequest, on eventLoop: any EventLoop) -> EventLoopFuture<PlayAnswer> {
        eventLoop.submit { self.playImmediately(request) }
    }

    public func publishTrackImmediately(of publisher: PublishSession, rendition: String) -> PublishAnswer {
        .refused(.unavailable("tracks are not published here"))
    }

    public func publishTrack(of publisher: PublishSession, rendition: String) async -> PublishAnswer {
        publishTrackImmediately(of: publisher, rendition: rendition)
    }

    public func publishTrack(of publisher: PublishSession, rendition: String, on eventLoop: any EventLoop) -> EventLoopFuture<PublishAnswer> {
        eventLoop.submit { self.publishTrackImmediately(of: publisher, rendition: rendition) }
    }
}

extension PublishAnswer {
    /// The answer as a `Result`, for callers that handle publishers and viewers alike.
    public var result: Result<PublishSession, SessionRefusal> {
        switch self {
        case .accepted(let session): .success(session)
        case .refused(let refusal): .failure(refusal)
        }
    }
}

extension PlayAnswer {
    /// The answer as a `Result`, for callers that handle publishers and viewers alike.
    public var result: Result<PlaySession, SessionRefusal> {
        switch self {
        case .accepted(let session): .success(session)
        case .refused(let refusal): .failure(refusal)
        }
    }
}
