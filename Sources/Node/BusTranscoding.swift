import Cluster
import Ingest
import Logging
import Media
import Synchronization
import Transcode

/// The transcode role's jobs: for each assignment from the coordinator, the source is
/// mirrored from the bus (`BusStreamSource`: GOP first, then live), decoded once, and
/// every rung is published back on the bus (`media.<app>.<name>.<rung>`), where relays
/// find it. Assignments are idempotent: one already running is left alone.
actor BusTranscoding {
    private final class Publications: Sendable {
        let list = Mutex<[BusPublication]>([])
    }

    private struct Job {
        let pipeline: TranscodePipeline
        let rungs: [String]
        let publications: Publications
        let source: StreamHub
        var feed: HubSubscriber?
    }

    private let bus: any Bus
    private let registry: StreamRegistry
    private let logger: Logger
    private var jobs: [StreamPath: Job] = [:]
    private var starting: Set<StreamPath> = []

    init(bus: any Bus, registry: StreamRegistry, logger: Logger) {
        self.bus = bus
        self.registry = registry
        self.logger = logger
    }

    func handle(_ instruction: NodeInstruction) async {
        switch instruction {
        case .transcode(let assignment):
            await start(assignment)
        case .stopTranscode(let app, let name):
            guard let path = try? StreamPath(app: app, name: name), let job = jobs.removeValue(forKey: path) else { return }
            logger.info("stopping a transcode job the coordinator moved away", metadata: ["stream": "\(path)"])
            if let feed = job.feed { job.source.unsubscribe(feed) }
            _ = await job.pipeline.finish()
        case .kick, .register:
            break
        }
    }

    /// What this node transcodes, for the heartbeat.
    var reports: [StreamReport] {
        jobs.map { path, job in .transcoding(app: path.app, name: path.name, rungs: job.rungs) }
    }

    var load: Double { Double(jobs.count) }

    private func start(_ assignment: TranscodeAssignment) async {
        guard let path = try? StreamPath(app: assignment.app, name: assignment.name),
              jobs[path] == nil, starting.insert(path).inserted
        else { return }
        defer { starting.remove(path) }
        // The source from the bus; absent (not yet, or no longer) means the next heartbeat
        // brings the assignment again.
        guard let source = await registry.resolve(path) else {
            logger.warning("the source of a transcode job is not on the bus yet", metadata: ["stream": "\(path)"])
            return
        }
        let ladder = Ladder(rungs: assignment.rungs.map { LadderRung(name: $0.name, height: $0.height, videoBitRate: $0.bitRate) })
        let publications = Publications()
        let bus = bus
        var jobLogger = logger
        jobLogger[metadataKey: "stream"] = "\(path)"
        let logger = jobLogger
        let pipeline: TranscodePipeline
        do {
            // A job starts with the source's whole cached GOP in one burst (up to 8 s with
            // some encoders' keyframe intervals): room for it, so it is not shed as lag.
            var configuration = TranscodePipeline.Configuration(ladder: ladder)
            configuration.queueCapacity = 240
            pipeline = try TranscodePipeline(source: path, configuration: configuration, serializers: [], logger: logger) { rendition in
                do {
                    let publication = try BusPublication(hub: rendition.hub, bus: bus, stream: path, rendition: rendition.plan.rung.name, logger: logger)
                    publications.list.withLock { $0.append(publication) }
                } catch {
                    logger.error("cannot publish a rung to the bus: \(error)")
                }
            }
        } catch {
            logger.error("cannot start transcoding: \(error)")
            return
        }
        logger.info("transcoding for the cluster with ladder \(ladder.rungs.map(\.name).joined(separator: ","))")
        let feed = TranscodeFeed.start(hub: source, pipeline: pipeline, logger: logger) { _ in
            await self.ended(path, pipeline: pipeline)
        }
        jobs[path] = Job(pipeline: pipeline, rungs: ladder.rungs.map(\.name), publications: publications, source: source, feed: feed)
    }

    private func ended(_ path: StreamPath, pipeline: TranscodePipeline) {
        if let job = jobs[path], job.pipeline === pipeline {
            jobs[path] = nil
        }
    }
}
