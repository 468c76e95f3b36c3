import Media

/// What happens to sessions, for observers: the coordinator's announcement, the bus
/// publication, HLS segmenting, metrics, the session table; webhooks and recording next.
/// Each session's start comes before its end, each told once (`SessionLife`).
/// `publishStarted` comes after the admission accepted and before the protocol answers the
/// publisher, so a stream is on the bus and segmented from its first frame; `playStarted`
/// as the protocol starts serving the viewer.
public enum SessionEvent: Sendable {
    /// A publisher was accepted into its hub (a new stream, or one resumed within its grace).
    case publishStarted(PublishSession)
    /// That publisher left: it disconnected, unpublished, was taken over or kicked
    /// (`PublishSession.endReason`). The stream itself lives on through its grace period.
    case publishEnded(PublishSession)
    /// A viewer was accepted and is being served.
    case playStarted(PlaySession)
    /// That viewer left (`PlaySession.endReason`).
    case playEnded(PlaySession)
}

/// Where a session's start and end are told: the node's observers, in order.
public typealias SessionEventSink = @Sendable (SessionEvent) async -> Void

/// Something that wants to know about sessions. Called from the session's own task, one
/// event at a time per session; an observer that has slow work to do (an HTTP hook) must
/// hand it off rather than hold the publisher's admission.
public protocol SessionObserver: Sendable {
    func observe(_ event: SessionEvent) async
}
