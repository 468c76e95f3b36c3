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
        guard case .publishStarted(let session) = event else { return }
        published.insert(session.hub)
        await publications.attach(session.hub)
    }
}
