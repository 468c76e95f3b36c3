import Cluster
import Logging
import Relay

/// `transcode`: the jobs the coordinator places here (`BusTranscoding`) and the
/// `TranscodeWorker` actor it places them through. In a process that also plays, rungs are
/// published through the node's admission too (`renditions`, set once the listeners exist).
struct TranscodeAssembly {
    let transcoding: BusTranscoding
    let worker: TranscodeWorker
    let renditions = RenditionAdmission()

    init(_ context: NodeContext) throws {
        let playsLocally = context.roles.contains(.relay) || context.roles.contains(.ingest)
        let jobs = BusTranscoding(
            bus: context.bus, registry: context.registry, ladders: context.live.ladders,
            localPlayback: playsLocally ? .init(renditions: renditions) : nil, logger: context.logger
        )
        transcoding = jobs
        let system = context.system
        worker = try system.makeActor(named: RoleAddress.transcodeWorker) { TranscodeWorker(transcoding: jobs, actorSystem: system) }
        // A drain moves the jobs to other transcoders and waits until each took over.
        if context.nats != nil {
            let coordinator = context.coordinator
            let nodeID = context.configuration.nodeID
            context.drain.add(NodeDrain.Participant(
                name: "transcode",
                begin: { grace in await jobs.beginDrain(coordinator: coordinator, nodeID: nodeID, within: grace) },
                pending: { await jobs.handoversPending }
            ))
        }
    }
}
