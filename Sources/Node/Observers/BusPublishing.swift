import Cluster
import Ingest
import Session

/// Puts every stream published to this ingest on the bus (relays and transcoders elsewhere
/// mirror it from there), and records it as this ingest's own, for kicks, revocations and
/// the heartbeat's reports.
struct BusPublishing: SessionObserver {
    let publications: BusPublications
    let published: PublishedHubs

    func observe(_ event: SessionEvent) async {
        // A transcoder's rungs are its own to publish (on the bus with its handover) and no
        // stream of their own.
        guard case .publishStarted(let session) = event, session.transport != .transcode, session.parent == nil else { return }
        published.insert(session.hub)
        await publications.attach(session.hub)
    }
}
