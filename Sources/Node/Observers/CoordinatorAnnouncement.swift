import Cluster
import Logging
import Media
import Session

/// Tells the coordinator of a new publish at once, so it places the stream's transcode job
/// now rather than at the next heartbeat (which reports the stream anyway, should this call
/// fail). The publisher never waits for it.
struct CoordinatorAnnouncement: SessionObserver {
    let coordinator: any CoordinatorAPI
    let nodeID: String
    let logger: Logger

    func observe(_ event: SessionEvent) async {
        // A transcoder's rungs are its own to publish (on the bus with its handover) and no
        // stream of their own.
        guard case .publishStarted(let session) = event, session.transport != .transcode, session.parent == nil else { return }
        let start = StreamStart(app: session.path.app, name: session.path.name, ingestNode: nodeID, facts: IngestReporter.facts(of: session.hub))
        let coordinator = coordinator
        let logger = logger
        Task {
            do {
                try await NodeActorSystem.$callTimeout.withValue(.seconds(1)) {
                    try await coordinator.streamStarted(start)
                }
            } catch {
                logger.debug("the coordinator learns of \(session.path) with the next heartbeat", metadata: ["error": "\(error)"])
            }
        }
    }
}
