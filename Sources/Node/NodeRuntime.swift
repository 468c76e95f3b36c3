import Cluster
import Coordinator
import Foundation
import Hummingbird
import Ingest
import Logging
import Media
import NIOCore
import NIOPosix
import Prometheus
import RTMP
import Relay
import Session
import Transcode
import ServiceLifecycle
import Synchronization
import UnixSignals

/// One Estuary process: the roles it hosts, wired to one bus and one stream registry.
///
/// `--role all` hosts every role and is the embedded default: without `--nats` its bus is
/// the in-process `LocalBus`, its coordinator keeps state in `<data-dir>/estuary.sqlite`,
/// and the roles talk to each other exactly as they do across machines, through the
/// coordinator actor and the role actors (`IngestNode`, `TranscodeWorker`, `RelayNode`).
/// Only media takes a shortcut, by design: roles in one process share the registry's
/// hubs, so a frame is never re-encoded for a bus nobody in the process reads
/// (`Bus.hasSubscribers`); with `--nats`, the same node also publishes to other nodes.
///
/// - `ingest`: accepts RTMP publishers (and plays its own streams to RTMP and HTTP-FLV
///   viewers that come to it directly), and puts every stream on the bus.
/// - `relay`: serves players over HTTP-FLV, HLS and RTMP from streams it fetches from the
///   bus only while they are watched (`BusStreamSource`); alone, it refuses publishers.
/// - `transcode`: runs the jobs the coordinator places on it (`BusTranscoding`).
/// - `coordinator`: the `Coordinator` actor, its SQLite store and the admin API.
///
/// Every node answers `/healthz`, `/readyz` (ready while the bus is connected) and
/// `/metrics`.
struct NodeRuntime {
    let role: NodeRole
    let configuration: NodeConfiguration
    let metrics: PrometheusCollectorRegistry

    /// The roles a process of `role` hosts. `all` alone is its own coordinator; `all`
    /// joining a cluster (`--nats`) uses the cluster's (`--coordinator-node`) and hosts it
    /// only when that is its own id: two coordinators on two files would each believe the
    /// other's nodes dead.
    static func hostedRoles(_ role: NodeRole, configuration: NodeConfiguration) -> Set<NodeRole> {
        guard role == .all else { return [role] }
        let workers: Set<NodeRole> = [.ingest, .transcode, .relay]
        let ownCoordinator = configuration.nats == nil || configuration.coordinatorNode == configuration.nodeID
        return ownCoordinator ? workers.union([.coordinator]) : workers
    }

    func run() async throws {
        let roles = Self.hostedRoles(role, configuration: configuration)
        var logger = Logger(label: "estuary")
        logger[metadataKey: "node"] = "\(configuration.nodeID)"
        logger[metadataKey: "role"] = "\(role.rawValue)"

        let nats: NATSBus?
        let bus: any Bus
        if let natsConfiguration = configuration.nats {
            var busConfiguration = natsConfiguration
            // A node may start before NATS (compose brings services up in any order).
            busConfiguration.retryOnFailedConnect = true
            let busLogger = logger
            let connected = try await NATSBus.connect(configuration: busConfiguration, logger: logger) { event in
                busLogger.notice("bus \(event)")
            }
            nats = connected
            bus = connected
        } else {
            guard role == .all else { throw ConfigurationError.needsBus(role.rawValue) }
            nats = nil
            bus = LocalBus()
        }
        let coordinatorNode = roles.contains(.coordinator) ? configuration.nodeID : configuration.coordinatorNode
        let system = try NodeActorSystem(nodeID: configuration.nodeID, bus: bus, logger: logger)
        let registry = StreamRegistry(serializers: OutputFormat.serializers, hubConfiguration: configuration.hub, publisherGrace: configuration.publisherGrace)
        // Streams of other nodes, mirrored on demand; a node alone has none to find.
        let remote = nats != nil && (roles.contains(.relay) || roles.contains(.transcode)) ? BusStreamSource(bus: bus, logger: logger) : nil
        await registry.setRemoteSource(remote)
        let group = MultiThreadedEventLoopGroup.singleton
        // Ready: the bus is connected and, for a node with a coordinator link, the coordinator
        // has answered at least once.
        let coordinatorStatus = CoordinatorLink.Status()
        let linked = !roles.subtracting([.coordinator]).isEmpty
        let router = NodeHTTP.router(metrics: metrics) { (nats?.isConnected ?? true) && (!linked || coordinatorStatus.hasAnswered) }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []

        // The coordinator first: the other roles of this process call it from their start.
        var coordinatorStore: CoordinatorStore?
        var coordinatorActor: Coordinator?
        if roles.contains(.coordinator) {
            let store = try await CoordinatorStore.open(at: configuration.databasePath)
            coordinatorStore = store
            let ladders = configuration.ladders.mapValues { ladder in
                ladder.rungs.map { RungSpec(name: $0.name, width: 0, height: $0.height, bitRate: $0.videoBitRate) }
            }
            let state = try await CoordinatorState.load(store: store, configuration: CoordinatorConfiguration(ladders: ladders), logger: logger)
            await state.setDispatch(NodeDispatch(system: system))
            // Kept alive for the node's lifetime: the actor system holds actors weakly.
            coordinatorActor = try system.makeActor(named: CoordinatorAddress.actorName) { Coordinator(state: state, actorSystem: system) }
            // Other nodes reach the actor once its subscription is on the server.
            try? await nats?.flush()
            let token: String
            if let configured = configuration.adminToken {
                token = configured
            } else {
                token = (0..<4).map { _ in String(UInt64.random(in: .min ... .max), radix: 16) }.joined()
                logger.warning("no admin token configured (--admin-token or ESTUARY_ADMIN_TOKEN): the admin API refuses every request")
            }
            CoordinatorAdminRoutes(state: state, bearerToken: token).register(on: router)
            services.append(.init(service: CoordinatorSweep(state: state)))
            logger.info("coordinator state in \(configuration.databasePath)")
        }
        let coordinator = try $CoordinatorAPI.resolve(id: CoordinatorAddress.id(onNode: coordinatorNode), using: system)

        // Who hears of every session's start and end, in order (`SessionEvent`).
        var observers: [any SessionObserver] = [SessionMetrics()]
        let hls = roles.contains(.relay) ? HLSService(configuration: configuration.hls, group: group, logger: logger) : nil

        var relayNode: RelayNode?
        var hlsRoutes: HLSRoutes?
        if roles.contains(.relay), let hls {
            relayNode = try system.makeActor(named: RoleAddress.relay) { RelayNode(registry: registry, actorSystem: system) }
            if roles.contains(.ingest) {
                // Local streams are segmented from their first frame.
                observers.append(HLSSegmenting(hls: hls))
            }
            let openRemote = remote.map { source in
                Self.openRemoteRenditions(
                    registry: registry, source: source, hls: hls,
                    rungs: RungDirectory(coordinator: coordinator, ladders: configuration.ladders)
                )
            }
            hlsRoutes = HLSRoutes(service: hls, onRequest: openRemote)
        }

        var admission: PublishAdmission?
        var keys: StreamKeyVerifier?
        var ingestNode: IngestNode?
        if roles.contains(.ingest) {
            admission = PublishAdmission(registry: registry, logger: logger)
            if configuration.requireStreamKeys {
                keys = StreamKeyVerifier(logger: logger) { path, key in
                    try await NodeActorSystem.$callTimeout.withValue(.seconds(1)) {
                        try await coordinator.verifyStreamKey(app: path.app, name: path.name, key: key)
                    }
                }
            }
            let reporter = IngestReporter()
            let published = PublishedHubs()
            ingestNode = try system.makeActor(named: RoleAddress.ingest) {
                IngestNode(registry: registry, reporter: reporter, published: published, keys: keys, logger: logger, actorSystem: system)
            }
            let publications = BusPublications(bus: bus, logger: logger)
            observers.append(BusPublishing(publications: publications, published: published))
            observers.append(CoordinatorAnnouncement(coordinator: coordinator, nodeID: configuration.nodeID, logger: logger))
        }

        var transcoding: BusTranscoding?
        var transcodeWorker: TranscodeWorker?
        if roles.contains(.transcode) {
            let playsLocally = roles.contains(.relay) || roles.contains(.ingest)
            let jobs = BusTranscoding(
                bus: bus, registry: registry, ladders: configuration.ladders,
                localPlayback: playsLocally ? .init(hls: hls) : nil, logger: logger
            )
            transcoding = jobs
            transcodeWorker = try system.makeActor(named: RoleAddress.transcodeWorker) { TranscodeWorker(transcoding: jobs, actorSystem: system) }
        }

        if roles.contains(.ingest) || roles.contains(.relay) {
            // One admission path for every protocol: RTMP publish and play, HTTP-FLV play.
            let sessions = NodeAdmission(
                admission: admission, playback: Playback(registry: registry), keys: keys, logger: logger,
                ladders: configuration.ladders, maxStreams: configuration.maxStreams, transcodes: TranscodeSlots(limit: configuration.maxTranscodes),
                observers: observers
            )
            PlaybackRoutes(flv: HTTPFLVRoutes(admission: sessions, flvFormat: OutputFormat.flv, logger: logger), hls: hlsRoutes).register(on: router)
            services.append(.init(service: RTMPServer(configuration: configuration.rtmp, admission: sessions, rtmpFormat: OutputFormat.rtmp, group: group, logger: logger)))
        }

        if !roles.subtracting([.coordinator]).isEmpty {
            let kickLogger = logger
            let link = CoordinatorLink(
                system: system, coordinatorNode: coordinatorNode, nodeID: configuration.nodeID, role: role,
                advertiseHost: configuration.advertiseHost, logger: logger,
                report: { [ingestNode, transcodeWorker, relayNode] in
                    // Load steers transcode placement: the rungs this node encodes and the
                    // publishers it holds, whole numbers, so that nodes equally busy tie and
                    // placement falls back to the rungs it assigned since their last
                    // heartbeat. Viewers are cheap.
                    let published = (try? await ingestNode?.streams()) ?? []
                    let jobs = (try? await transcodeWorker?.jobs()) ?? []
                    let played = (try? await relayNode?.streams()) ?? []
                    let load = Double(jobs.reduce(0) { $0 + ($1.rungs?.count ?? 0) } + published.count)
                    return .init(load: load, streams: StreamReport.merged(published + jobs + played))
                },
                handle: { [ingestNode, transcoding] instruction in
                    switch instruction {
                    case .transcode, .stopTranscode:
                        await transcoding?.handle(instruction)
                    case .kick(let app, let name):
                        if (try? await ingestNode?.kick(app: app, name: name)) != true {
                            kickLogger.notice("a kick for a stream this node does not publish", metadata: ["stream": "\(app)/\(name)"])
                        }
                    case .keyRevoked(let app, let name):
                        _ = try? await ingestNode?.keyRevoked(app: app, name: name)
                    case .register:
                        break
                    }
                },
                status: coordinatorStatus
            )
            services.append(.init(service: link))
        }

        services.insert(.init(service: NodeHTTP.application(router: router, configuration: configuration, logger: logger)), at: 0)
        services.append(.init(service: StreamShutdown(registry: registry)))
        let serviceGroup = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        let listens = roles.contains(.ingest) || roles.contains(.relay) ? "RTMP :\(configuration.rtmp.port), " : ""
        let busName = configuration.nats?.redactedServers ?? "in-process"
        logger.info("Estuary node (role \(role.rawValue), id \(configuration.nodeID)): \(listens)HTTP :\(configuration.httpPort), bus \(busName)")
        do {
            try await serviceGroup.run()
        } catch let error as RTMPListenerBindError {
            throw NodeStartupError.cannotListen("RTMP", "\(error.host):\(error.port)", flag: "--rtmp-port", Self.reason(error.underlying))
        } catch let error as IOError where [EADDRINUSE, EACCES, EADDRNOTAVAIL].contains(error.errnoCode) {
            // Hummingbird's bind error: the only other listener.
            throw NodeStartupError.cannotListen("HTTP", "\(configuration.bindHost):\(configuration.httpPort)", flag: "--http-port", Self.reason(error))
        }
        withExtendedLifetime((coordinatorActor, ingestNode, transcodeWorker, relayNode)) {}
        try? await coordinatorStore?.close()
        if let nats {
            await nats.close()
        } else {
            (bus as? LocalBus)?.close()
        }
    }

    /// The system's words for a socket error (`Address already in use`), without NIO's call name.
    private static func reason(_ error: any Error) -> String {
        if let io = error as? IOError { return String(cString: strerror(io.errnoCode)) }
        return "\(error)"
    }

    /// For a relay: HLS asks for a stream by its source path. Opens the source and its rungs
    /// (as the coordinator's lookup names them) from the bus, and segments each as a
    /// rendition.
    private static func openRemoteRenditions(
        registry: StreamRegistry, source: BusStreamSource, hls: HLSService, rungs: RungDirectory
    ) -> @Sendable (StreamPath) async -> Void {
        let absent = NegativeCache()
        return { path in
            var candidates = [RenditionPath.source(path)]
            for rung in await rungs.names(of: path) {
                if let rungPath = try? RenditionPath(stream: path, rendition: rung) {
                    candidates.append(rungPath)
                }
            }
            for candidate in candidates where !absent.contains(candidate) {
                guard let hub = await registry.resolve(candidate) else {
                    absent.insert(candidate)
                    continue
                }
                if await hls.attach(hub) {
                    source.addInternalSubscriber(candidate)
                }
            }
        }
    }
}

/// Which rungs a stream has, for a relay's HLS: the coordinator knows (`lookup`: the
/// renditions of the live session, whatever ladder the coordinator was configured with);
/// while it cannot be asked, the relay's own ladder for the application stands in.
///
/// A list of rungs is kept 5 s, so players polling playlists do not each call the
/// coordinator; an empty answer (not live yet) or a stand-in only 1 s, so a player that
/// asks at go-live gets the rungs in its next master playlist. Concurrent requests for
/// one stream share one call. At most `capacity` streams are remembered.
final class RungDirectory: Sendable {
    private enum Entry {
        case known([String], until: ContinuousClock.Instant)
        case asking(Task<[String], Never>)
    }

    private let coordinator: $CoordinatorAPI
    private let ladders: [String: Ladder]
    private let entries = Mutex<[StreamPath: Entry]>([:])

    /// The most streams remembered. HLS requests need no credentials and every name one
    /// asks about becomes an entry: requests for random names must not grow the table
    /// (expired entries are only swept when a new name is asked about, so expiry alone
    /// would not bound it under a flood of new names).
    static let capacity = 4096

    init(coordinator: $CoordinatorAPI, ladders: [String: Ladder]) {
        self.coordinator = coordinator
        self.ladders = ladders
    }

    func names(of path: StreamPath) async -> [String] {
        let now = ContinuousClock.now
        let cached = entries.withLock { entries -> [String]? in
            if case .known(let names, let until) = entries[path], until > now { return names }
            return nil
        }
        if let cached { return cached }
        let task = entries.withLock { entries -> Task<[String], Never> in
            switch entries[path] {
            case .known(let names, let until) where until > now:
                return Task { names }
            case .asking(let task):
                return task
            default:
                Self.makeRoom(in: &entries, now: now)
                let task = Task { await self.ask(path) }
                entries[path] = .asking(task)
                return task
            }
        }
        return await task.value
    }

    private func ask(_ path: StreamPath) async -> [String] {
        let coordinator = coordinator
        var names: [String]
        var keep = Duration.seconds(1)
        do {
            let location = try await NodeActorSystem.$callTimeout.withValue(.seconds(1)) {
                try await coordinator.lookup(app: path.app, name: path.name)
            }
            // Not live according to the coordinator: only the source can be asked for.
            names = location?.renditions.map(\.rung.name) ?? []
            if !names.isEmpty { keep = .seconds(5) }
        } catch {
            names = ladders[path.app]?.rungs.map(\.name) ?? []
        }
        let until = ContinuousClock.now + keep
        entries.withLock { entries in
            // Gone if the table was full meanwhile: answered, not cached.
            if entries[path] != nil { entries[path] = .known(names, until: until) }
        }
        return names
    }

    /// Drops expired answers; then, while the table is full, the answer closest to expiry
    /// (the oldest of those kept as long) or, if every entry is a lookup in flight, any
    /// one of them (its callers still get their answer, it is just not cached).
    private static func makeRoom(in entries: inout [StreamPath: Entry], now: ContinuousClock.Instant) {
        entries = entries.filter {
            if case .known(_, let until) = $0.value { return until > now }
            return true
        }
        while entries.count >= capacity {
            var oldest: (path: StreamPath, until: ContinuousClock.Instant)?
            for (path, entry) in entries {
                guard case .known(_, let until) = entry else { continue }
                if let current = oldest, current.until <= until { continue }
                oldest = (path, until)
            }
            guard let victim = oldest?.path ?? entries.keys.first else { return }
            entries[victim] = nil
        }
    }
}

/// The coordinator's sweep for dead nodes, as a service of the node.
struct CoordinatorSweep: Service {
    let state: CoordinatorState

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await state.run()
        }
    }
}

/// Paths recently found on no node, so that HLS requests do not ask the bus for absent
/// rungs on every playlist reload; entries expire after two seconds.
final class NegativeCache: Sendable {
    private let entries = Mutex<[RenditionPath: ContinuousClock.Instant]>([:])

    func contains(_ path: RenditionPath) -> Bool {
        entries.withLock { entries in
            guard let expiry = entries[path] else { return false }
            if expiry < .now {
                entries[path] = nil
                return false
            }
            return true
        }
    }

    /// The most names remembered: requests for random names must not grow the table.
    static let capacity = 4096

    func insert(_ path: RenditionPath) {
        entries.withLock { entries in
            if entries.count >= Self.capacity {
                let now = ContinuousClock.now
                entries = entries.filter { $0.value >= now }
                // Still full of live entries: forget them all, it is only a cache.
                if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            }
            entries[path] = .now + .seconds(2)
        }
    }

    var count: Int { entries.withLock { $0.count } }
}

/// Why a node could not start; one line for the operator, and a non-zero exit.
enum NodeStartupError: Error, CustomStringConvertible {
    case cannotListen(String, String, flag: String, String)

    var description: String {
        switch self {
        case .cannotListen(let listener, let address, let flag, let reason):
            "cannot listen for \(listener) on \(address): \(reason) (choose another port with \(flag))"
        }
    }
}
