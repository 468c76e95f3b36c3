import Cluster
import Logging
import ServiceLifecycle

/// Every role but the coordinator's: the node's link to the coordinator (register,
/// heartbeat with what the node's roles report, instructions handed to them).
struct CoordinatorLinkAssembly {
    let services: [ServiceGroupConfiguration.ServiceConfiguration]

    init(_ context: NodeContext, ingest: IngestAssembly?, transcode: TranscodeAssembly?, relay: RelayAssembly?, edge: EdgeNode? = nil) {
        let ingestNode = ingest?.node
        let transcodeWorker = transcode?.worker
        let relayNode = relay?.node
        let transcoding = transcode?.transcoding
        let logger = context.logger
        let link = CoordinatorLink(
            system: context.system, coordinatorNode: context.coordinatorNode, nodeID: context.configuration.nodeID, role: context.role,
            advertiseHost: context.configuration.advertiseHost, logger: logger,
            report: {
                // Load steers transcode placement: the rungs this node encodes and the
                // publishers it holds, whole numbers, so that nodes equally busy tie and
                // placement falls back to the rungs it assigned since their last
                // heartbeat. Viewers are cheap.
                let published = (try? await ingestNode?.streams()) ?? []
                let jobs = (try? await transcodeWorker?.jobs()) ?? []
                let played = (try? await relayNode?.streams()) ?? []
                let pulled = (try? await edge?.pulls()) ?? []
                let load = Double(jobs.reduce(0) { $0 + ($1.rungs?.count ?? 0) } + published.count)
                return .init(load: load, streams: StreamReport.merged(published + jobs + played + pulled))
            },
            handle: { instruction in
                switch instruction {
                case .transcode, .stopTranscode:
                    await transcoding?.handle(instruction)
                case .kick(let app, let name):
                    if (try? await ingestNode?.kick(app: app, name: name)) != true {
                        logger.notice("a kick for a stream this node does not publish", metadata: ["stream": "\(app)/\(name)"])
                    }
                case .keyRevoked(let app, let name):
                    _ = try? await ingestNode?.keyRevoked(app: app, name: name)
                case .register:
                    break
                }
            },
            status: context.coordinatorStatus
        )
        services = [.init(service: link)]
    }
}
