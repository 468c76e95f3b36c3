import Cluster
import Ingest
import Logging
import Media
import Relay
import Synchronization
import Transcode

/// The transcode role's jobs: for each assignment from the coordinator, the source is
/// found in the registry (on a transcode node, a mirror of the bus, `BusStreamSource`:
/// GOP first, then live; on a node that also ingests, the publisher's own hub), decoded
/// once, and every rung is published back on the bus (`media.<app>.<name>.<rung>`),
/// where relays find it. Assignments are idempotent: one already running is left alone.
///
/// On a node that also plays streams (`--role all`), each rung is also a hub of the
/// node's registry (`abr/demo/480p` over RTMP and HTTP-FLV) and an HLS rendition of its
/// source, exactly as a relay would mirror it, without the trip through the bus.
actor BusTranscoding {
    /// Where a node that plays its own streams puts the rungs.
    struct LocalPlayback: Sendable {
        let hls: HLSService?
    }

    /// A job's rungs on the bus: one publication per rung, by rung name. A rung the source
    /// drops when it shrinks comes back, with a new hub, when it grows again (a publisher
    /// may reconfigure 5 times in 10 s); the publication of its previous hub (which holds
    /// that ended hub and a GOP-responder subscription, a thread in cnats) is cancelled
    /// then, instead of being kept until the whole job ends: the count stays bounded by the
    /// ladder. The old hub has normally ended and said so on `end.` long before; if its end
    /// is still queued on the rung's thread, relays just go on with the new publication,
    /// which uses the same subject with a new epoch.
    private final class Publications: Sendable {
        private let byRung = Mutex<[String: BusPublication]>([:])

        /// Makes `publication` the one of `rung`, cancelling the one it replaces.
        func replace(_ rung: String, with publication: BusPublication) {
            let previous = byRung.withLock { $0.updateValue(publication, forKey: rung) }
            previous?.cancel()
        }
    }

    private struct Job {
        let pipeline: TranscodePipeline
        let rungs: [String]
        /// Each rung's video bit rate, as configured.
        let bitRates: [String: Int]
        let publications: Publications
        var feed: FrameSubscription?
    }

    private let bus: any Bus
    private let registry: StreamRegistry
    private let ladders: [String: Ladder]
    private let localPlayback: LocalPlayback?
    private let logger: Logger
    private var jobs: [StreamPath: Job] = [:]
    private var starting: Set<StreamPath> = []

    /// - Parameter ladders: the node's configured ladders. A rung of an assignment that one
    ///   of them names is encoded with its full settings (a frame-rate cap, say); the
    ///   assignment carries only the name, height and bit rate.
    init(bus: any Bus, registry: StreamRegistry, ladders: [String: Ladder], localPlayback: LocalPlayback?, logger: Logger) {
        self.bus = bus
        self.registry = registry
        self.ladders = ladders
        self.localPlayback = localPlayback
        self.logger = logger
    }

    func handle(_ instruction: NodeInstruction) async {
        switch instruction {
        case .transcode(let assignment):
            await start(assignment)
        case .stopTranscode(let app, let name):
            guard let path = try? StreamPath(app: app, name: name), let job = jobs.removeValue(forKey: path) else { return }
            logger.info("stopping a transcode job the coordinator moved away", metadata: ["stream": "\(path)"])
            job.feed?.cancel()
            _ = await job.pipeline.finish()
        case .kick, .keyRevoked, .register:
            break
        }
    }

    /// What this node transcodes, for the heartbeat.
    var reports: [StreamReport] {
        jobs.map { path, job in
            let statistics = job.pipeline.statistics
            let produced = statistics.producing.compactMap { name -> RungSpec? in
                guard let rendition = statistics.renditions[name] else { return nil }
                return RungSpec(name: name, width: rendition.width, height: rendition.height, bitRate: job.bitRates[name] ?? 0)
            }
            return .transcoding(app: path.app, name: path.name, rungs: job.rungs, produced: statistics.producing.isEmpty ? nil : produced)
        }
    }

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
        let configured = ladders[path.app]?.rungs ?? []
        let ladder = Ladder(rungs: assignment.rungs.map { spec in
            configured.first { $0.name == spec.name && $0.height == spec.height && $0.videoBitRate == spec.bitRate }
                ?? LadderRung(name: spec.name, height: spec.height, videoBitRate: spec.bitRate)
        })
        let publications = Publications()
        let bus = bus
        let registry = registry
        let localPlayback = localPlayback
        var jobLogger = logger
        jobLogger[metadataKey: "stream"] = "\(path)"
        let logger = jobLogger
        let pipeline: TranscodePipeline
        do {
            // A job starts with the source's whole cached GOP in one burst: room for it plus
            // 8 s of live frames at 30 fps, so a long GOP is not shed as lag. The GOP cache
            // itself is bounded in frames and bytes (`HubConfiguration`), and so is this.
            var configuration = TranscodePipeline.Configuration(ladder: ladder)
            configuration.queueCapacity = source.statistics.gopFrames + 240
            let serializers = localPlayback == nil ? [] : registry.serializers
            pipeline = try TranscodePipeline(source: path, configuration: configuration, serializers: serializers, logger: logger) { rendition in
                if let localPlayback {
                    Task {
                        await registry.register(rendition.hub)
                        await localPlayback.hls?.attach(rendition.hub)
                    }
                }
                do {
                    let publication = try BusPublication(hub: rendition.hub, bus: bus, logger: logger)
                    publications.replace(rendition.plan.rung.name, with: publication)
                } catch {
                    logger.error("cannot publish a rung to the bus: \(error)")
                }
            }
        } catch {
            logger.error("cannot start transcoding: \(error)")
            return
        }
        logger.info("transcoding for the cluster with ladder \(ladder.rungs.map(\.name).joined(separator: ","))")
        // Rungs that only go over the bus join at the live edge (a moved job's relays hold a
        // newer timeline than the cached GOP); a node that also plays them itself keeps every
        // rung keyframe on a source keyframe from the start.
        let feed = TranscodeFeed.start(hub: source, pipeline: pipeline, logger: logger, joinAtLiveEdge: localPlayback == nil) { _ in
            await self.ended(path, pipeline: pipeline)
        }
        jobs[path] = Job(
            pipeline: pipeline, rungs: ladder.rungs.map(\.name),
            bitRates: Dictionary(ladder.rungs.map { ($0.name, $0.videoBitRate) }, uniquingKeysWith: { first, _ in first }),
            publications: publications, feed: feed)
    }

    private func ended(_ path: StreamPath, pipeline: TranscodePipeline) {
        if let job = jobs[path], job.pipeline === pipeline {
            jobs[path] = nil
        }
    }
}
