import Media

/// The one admission path for every protocol: who may publish and play what. A protocol
/// codec (RTMP today; HTTP-FLV for play; SRT, edges' pulls next) turns its wire requests
/// into `PublishRequest`s and `PlayRequest`s and applies the decisions; the policy (one
/// publisher per stream, stream keys, capacities, and later hooks and play tokens) lives
/// behind this protocol, in one place per node (`NodeAdmission`).
public protocol SessionAdmission: Sendable {
    func publish(_ request: PublishRequest) async -> PublishDecision
    /// A publisher accepted by `publish` disconnected, unpublished or was evicted.
    func unpublished(_ session: PublishSession) async
    func play(_ request: PlayRequest) async -> PlayDecision
    /// A viewer accepted by `play` is being served: the protocol says so as it starts
    /// answering (RTMP after `Play.Start`, HTTP-FLV once its response runs), and
    /// `playEnded` once it has unsubscribed, so the two always pair (an accepted HTTP
    /// request whose body never runs has neither).
    func playStarted(_ session: PlaySession) async
    /// That viewer left.
    func playEnded(_ session: PlaySession) async
}

/// An admission that answers without waiting: a fixed policy, a test, a fuzz target. A
/// protocol handler may call it on its event loop and apply the answer on the next tick
/// without a Task, which lets a connection run on an `EmbeddedChannel` and replay the same
/// way every time.
public protocol ImmediateSessionAdmission: SessionAdmission {
    func publishImmediately(_ request: PublishRequest) -> PublishDecision
    func playImmediately(_ request: PlayRequest) -> PlayDecision
    func unpublishedImmediately(_ session: PublishSession)
    func playStartedImmediately(_ session: PlaySession)
    func playEndedImmediately(_ session: PlaySession)
}

extension ImmediateSessionAdmission {
    public func publish(_ request: PublishRequest) async -> PublishDecision {
        publishImmediately(request)
    }

    public func play(_ request: PlayRequest) async -> PlayDecision {
        playImmediately(request)
    }

    public func unpublished(_ session: PublishSession) async {
        unpublishedImmediately(session)
    }

    public func playStarted(_ session: PlaySession) async {
        playStartedImmediately(session)
    }

    public func playEnded(_ session: PlaySession) async {
        playEndedImmediately(session)
    }
}
