import Edge
import Session

/// Forwards every stream published here to its application's targets (`forwards` in the
/// configuration): push-restreaming to a CDN or a platform, see `StreamForward`.
struct Forwarding: SessionObserver {
    let forwards: StreamForwards

    func observe(_ event: SessionEvent) async {
        // A transcoder's rungs are its own to publish (on the bus with its handover) and no
        // stream of their own.
        guard case .publishStarted(let session) = event, session.transport != .transcode, session.parent == nil else { return }
        await forwards.start(session.path, hub: session.hub)
    }
}
