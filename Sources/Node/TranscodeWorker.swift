import Cluster
import Distributed

/// The transcode role as a distributed actor (`TranscodeWorkerAPI`, named
/// `RoleAddress.transcodeWorker`): the coordinator pushes jobs to it as it places or moves
/// them, and the heartbeat's instructions reach the same `BusTranscoding`, so a push that
/// was lost is repaired one heartbeat later. Both paths are idempotent.
distributed actor TranscodeWorker: TranscodeWorkerAPI {
    typealias ActorSystem = NodeActorSystem

    private let transcoding: BusTranscoding

    init(transcoding: BusTranscoding, actorSystem: NodeActorSystem) {
        self.transcoding = transcoding
        self.actorSystem = actorSystem
    }

    distributed func assign(_ assignment: TranscodeAssignment) async {
        await transcoding.handle(.transcode(assignment))
    }

    distributed func stop(app: String, name: String) async {
        await transcoding.handle(.stopTranscode(app: app, name: name))
    }

    distributed func jobs() async -> [StreamReport] {
        await transcoding.reports
    }
}
