import Cluster
import Ingest
import Logging
import Media
import NIOCore
import Relay
import Session
import Synchronization
import Transcode

/// The transcode role's jobs: for each assignment from the coordinator, the source is
/// found in the registry (on a transcode node, a mirror of the bus, `BusStreamSource`:
/// GOP first, then live; on a node that also ingests, the publisher's own hub), decoded
/// once, and every rung is published back on the bus (`media.<app>.<name>.<rung>`),
/// where relays find it. Assignments are idempotent: one already running is left alone.
///
/// **Handover.** A job moved off a draining transcoder (`TranscodeAssignment.takesOverFrom`)
/// starts here without publishing, agrees on a source keyframe with the draining node over
/// `handover.ask.…`, and takes over there (`RungHandover`); the draining node, which
/// answers those requests for every job it runs, stops each job once all its rungs
/// reached that keyframe, without announcing an end: the relays' viewers stay.
///
/// On a node that also plays streams (`--role all`), each rung is also published through
/// the node's admission (`RenditionAdmission`, protocol `transcode`): a hub of the node's
/// registry (`abr/demo/480p` over RTMP and HTTP-FLV), an HLS rendition of its source and a
/// session in the table, exactly as a relay would mirror it, without the trip through the
/// bus. Its session ends with the job.
actor BusTranscoding {
    /// Where a node that plays its own streams puts the rungs.
    struct LocalPlayback: Sendable {
        let renditions: RenditionAdmission
    }

    /// A job's rungs published locally, each a session that ends with the job (or when the
    /// rung is made again after the source shrank and grew).
    final class LocalRungs: Sendable {
        private let state = Mutex<(sessions: [String: PublishSession], ended: SessionEndReason?)>(([:], nil))

        func add(_ rung: String, _ session: PublishSession) {
            let (previous, ended) = state.withLock { state -> (PublishSession?, SessionEndReason?) in
                guard state.ended == nil else { return (nil, state.ended) }
                return (state.sessions.updateValue(session, forKey: rung), nil)
            }
            previous?.end(.streamEnded)
            if let ended { session.end(ended) }
        }

        func endAll(_ reason: SessionEndReason) {
            let sessions = state.withLock { state -> [PublishSession] in
                guard state.ended == nil else { return [] }
                state.ended = reason
                defer { state.sessions = [:] }
                return Array(state.sessions.values)
            }
            for session in sessions { session.end(reason) }
        }
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

        /// Stops every rung's publication: nothing more goes out, not even an end.
        func cancelAll() {
            let all = byRung.withLock { byRung in
                defer { byRung = [:] }
                return Array(byRung.values)
            }
            for publication in all { publication.cancel() }
        }
    }

    private struct Job {
        let pipeline: TranscodePipeline
        let rungs: [String]
        /// Each rung's video bit rate, as configured.
        let bitRates: [String: Int]
        let publications: Publications
        let handover: RungHandover
        /// The job's handover subscriptions (`handover.ask`, and `handover.done` while it
        /// takes over).
        let listeners: [BusSubscription]
        var feed: FrameSubscription?
        let localRungs: LocalRungs

        func stop() async {
            for listener in listeners { listener.cancel() }
            feed?.cancel()
            _ = await pipeline.finish()
            localRungs.endAll(.left)
            LargeAllocations.returnFreedPages()
        }
    }

    /// A drain of this node: the jobs the coordinator moved away, which run here until
    /// their new transcoder took over.
    private enum Drain {
        case none
        /// Asking the coordinator to move the jobs.
        case asking
        case moved(Set<StreamPath>)
    }

    private let bus: any Bus
    private let registry: StreamRegistry
    private let ladders: Reloadable<[String: Ladder]>
    private let localPlayback: LocalPlayback?
    private let logger: Logger
    private var jobs: [StreamPath: Job] = [:]
    private var starting: Set<StreamPath> = []
    private var drain = Drain.none

    /// - Parameter ladders: the node's configured ladders. A rung of an assignment that one
    ///   of them names is encoded with its full settings (a frame-rate cap, say); the
    ///   assignment carries only the name, height and bit rate.
    init(bus: any Bus, registry: StreamRegistry, ladders: Reloadable<[String: Ladder]>, localPlayback: LocalPlayback?, logger: Logger) {
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
            await job.stop()
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

    // MARK: Draining

    /// Asks the coordinator to move this node's jobs (retrying for up to `within`); each
    /// runs on until its new transcoder took over.
    func beginDrain(coordinator: some CoordinatorAPI, nodeID: String, within: Duration) async {
        guard case .none = drain else { return }
        drain = .asking
        let deadline = ContinuousClock.now + within
        var moved: Set<StreamPath> = []
        while ContinuousClock.now < deadline, !Task.isCancelled {
            do {
                let paths = try await coordinator.drain(nodeID: nodeID)
                moved = Set(paths.compactMap { path in
                    let parts = path.split(separator: "/", maxSplits: 1).map(String.init)
                    return parts.count == 2 ? try? StreamPath(app: parts[0], name: parts[1]) : nil
                })
                logger.notice("draining: the coordinator moves \(moved.count) of \(jobs.count) transcode jobs; each runs here until its new transcoder takes over")
                break
            } catch {
                logger.warning("draining: the coordinator does not answer; jobs move when this node leaves", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
        drain = .moved(moved)
    }

    /// Jobs still to hand over before a draining node may leave.
    var handoversPending: Int {
        switch drain {
        case .none: 0
        case .asking: 1
        case .moved(let moved): jobs.keys.filter { moved.contains($0) }.count
        }
    }

    /// Every rung of a moved job reached the cut: the new transcoder publishes now.
    private func handedOver(_ path: StreamPath, pipeline: TranscodePipeline) async {
        guard let job = jobs[path], job.pipeline === pipeline else { return }
        jobs[path] = nil
        logger.notice("handed the transcode job over at a source keyframe", metadata: ["stream": "\(path)", "cut": "\(job.handover.cut.map(String.init) ?? "?")"])
        // No end on the bus: the relays' mirrors continue with the new transcoder's frames.
        job.publications.cancelAll()
        await job.stop()
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
        let configured = ladders.value[path.app]?.rungs ?? []
        let ladder = Ladder(rungs: assignment.rungs.map { spec in
            configured.first { $0.name == spec.name && $0.height == spec.height && $0.videoBitRate == spec.bitRate }
                ?? LadderRung(name: spec.name, height: spec.height, videoBitRate: spec.bitRate)
        })
        let publications = Publications()
        let bus = bus
        let doneSubject = HandoverSubject.done(path)
        let pipelineBox = Mutex<TranscodePipeline?>(nil)
        let handover = RungHandover(
            mode: assignment.takesOverFrom == nil ? .direct : .incoming,
            onRungCut: { rung in
                // After the rung's last frame, on the same connection.
                try? bus.publish(subject: doneSubject, payload: ByteBuffer(string: rung))
            },
            onAllCut: { [weak self] in
                guard let pipeline = pipelineBox.withLock({ $0 }) else { return }
                Task { await self?.handedOver(path, pipeline: pipeline) }
            }
        )
        let localPlayback = localPlayback
        let localRungs = LocalRungs()
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
                        guard let session = await localPlayback.renditions.publish(rendition) else { return }
                        localRungs.add(rendition.plan.rung.name, session)
                    }
                }
                do {
                    let publication = try BusPublication(hub: rendition.hub, bus: bus, logger: logger, handover: handover)
                    publications.replace(rendition.plan.rung.name, with: publication)
                } catch {
                    logger.error("cannot publish a rung to the bus: \(error)")
                }
            }
        } catch {
            logger.error("cannot start transcoding: \(error)")
            return
        }
        pipelineBox.withLock { $0 = pipeline }
        let listeners = listen(path, handover: handover, takesOverFrom: assignment.takesOverFrom, logger: logger)
        let takeover = assignment.takesOverFrom.map { ", taking over from \($0) at a source keyframe" } ?? ""
        logger.info("transcoding for the cluster with ladder \(ladder.rungs.map(\.name).joined(separator: ","))\(takeover)")
        // Rungs that only go over the bus join at the live edge (a moved job's relays hold a
        // newer timeline than the cached GOP); a node that also plays them itself keeps every
        // rung keyframe on a source keyframe from the start.
        let feed = TranscodeFeed.start(hub: source, pipeline: pipeline, logger: logger, joinAtLiveEdge: localPlayback == nil, observe: handover.sourceFrame) { _ in
            localRungs.endAll(.streamEnded)
            await self.ended(path, pipeline: pipeline)
        }
        jobs[path] = Job(
            pipeline: pipeline, rungs: ladder.rungs.map(\.name),
            bitRates: Dictionary(ladder.rungs.map { ($0.name, $0.videoBitRate) }, uniquingKeysWith: { first, _ in first }),
            publications: publications, handover: handover, listeners: listeners, feed: feed, localRungs: localRungs)
        if assignment.takesOverFrom != nil {
            Task { await Self.askToTakeOver(path, handover: handover, bus: bus, logger: logger) }
        }
    }

    /// The job's handover subscriptions: it answers a later transcoder's request to take
    /// over; while it takes over itself, it hears the outgoing stop each rung.
    private func listen(_ path: StreamPath, handover: RungHandover, takesOverFrom: String?, logger: Logger) -> [BusSubscription] {
        var listeners: [BusSubscription] = []
        let bus = bus
        do {
            listeners.append(try bus.subscribe(subject: HandoverSubject.ask(path)) { message in
                guard let proposed = HandoverSubject.decodeTimestamp(message.payload),
                      let threshold = handover.beginOutgoing(proposed: proposed)
                else { return }
                try? bus.respond(to: message, payload: HandoverSubject.encode(threshold))
                logger.notice("handing the transcode job over at the first source keyframe after \(threshold) ms")
            })
            if takesOverFrom != nil {
                listeners.append(try bus.subscribe(subject: HandoverSubject.done(path)) { message in
                    guard let rung = HandoverSubject.decodeRung(message.payload) else { return }
                    handover.outgoingStopped(rung: rung)
                })
            }
        } catch {
            logger.warning("cannot listen for handovers: \(error)")
        }
        return listeners
    }

    /// The incoming side: once the source is read, asks the outgoing for the cut; without
    /// an answer, publishes from its first keyframe.
    private static func askToTakeOver(_ path: StreamPath, handover: RungHandover, bus: any Bus, logger: Logger) async {
        let deadline = ContinuousClock.now + .seconds(10)
        while handover.newestSourceTimestamp == nil, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        guard let newest = handover.newestSourceTimestamp else {
            handover.abandon()
            return
        }
        do {
            let reply = try await bus.request(subject: HandoverSubject.ask(path), payload: HandoverSubject.encode(newest), timeout: .seconds(2))
            guard let threshold = HandoverSubject.decodeTimestamp(reply) else {
                logger.warning("a malformed handover answer; publishing from the first keyframe")
                handover.abandon()
                return
            }
            handover.adopt(threshold: threshold)
            logger.notice("taking the transcode job over at the first source keyframe after \(threshold) ms")
        } catch {
            logger.notice("no transcoder to take the job over from (\(error)); publishing from the first keyframe")
            handover.abandon()
        }
    }

    private func ended(_ path: StreamPath, pipeline: TranscodePipeline) {
        if let job = jobs[path], job.pipeline === pipeline {
            jobs[path] = nil
            for listener in job.listeners { listener.cancel() }
        }
    }
}
