import Cluster
import Ingest
import Session

/// Puts every stream published to this ingest on the bus (relays and transcoders elsewhere
/// mirror it from there), and records it as this ingest's own, for kicks, revocations and
/// the heartbeat's reports. A multitrack publisher's tracks go on the bus too, each under
/// its rendition's subject, and are reported with their stream (relays learn of them from
/// the coordinator's lookup).
struct BusPublishing: SessionObserver {
    let publications: BusPublications
    let published: PublishedHubs
    /// A clustered node: tracks go on the bus (they are reported either way), and a stream
    /// another ingest still holds continues that one's timeline.
    let clustered: Bool

    func observe(_ event: SessionEvent) async {
        // A transcoder's rungs are its own to publish (on the bus with its handover) and no
        // stream of their own.
        guard case .publishStarted(let session) = event, session.transport != .transcode else { return }
        if session.parent == nil {
            // Before its first frame (the publish is answered after the observers): a stream
            // another ingest still holds continues that one's timeline.
            if clustered { await publications.continueTimelineFromElsewhere(session.hub) }
            published.insert(session.hub)
        } else {
            published.insertTrack(session.hub)
            guard clustered else { return }
        }
        await publications.attach(session.hub)
    }
}
