import Cluster
import Coordinator
import Hummingbird
import Ingest
import Logging
import Media
import NIOPosix
import Prometheus
import RTMP
import Relay
import Transcode
import ServiceLifecycle
import Synchronization
import UnixSignals

/// One role of a cluster, connected to the others by NATS.
///
/// - `ingest`: accepts RTMP publishers (and plays its own streams to RTMP and HTTP-FLV
///   viewers that come to it directly), and puts every stream on the bus.
/// - `relay`: serves players over HTTP-FLV, HLS and RTMP from streams it fetches from the
///   bus only while they are watched (`BusStreamSource`); it refuses publishers.
///
/// Both answer `/healthz`, `/readyz` (ready while the bus is connected) and `/metrics`.
struct ClusterNode {
    let role: NodeRole
    let configuration: NodeConfiguration
    let metrics: PrometheusCollectorRegistry

    func run() async throws {
        var logger = Logger(label: "estuary")
        logger[metadataKey: "node"] = "\(configuration.nodeID)"
        logger[metadataKey: "role"] = "\(role.rawValue)"
        guard let natsConfiguration = configuration.nats else {
            throw ConfigurationError.needsBus(role.rawValue)
        }
        var busConfiguration = natsConfiguration
        // A node may start before NATS (compose brings services up in any order).
        busConfiguration.retryOnFailedConnect = true
        let busLogger = logger
        let bus = try await NATSBus.connect(configuration: busConfiguration, logger: logger) { event in
            busLogger.notice("bus \(event)")
        }
        let system = try NodeActorSystem(nodeID: configuration.nodeID, bus: bus, logger: logger)
        let registry = StreamRegistry(serializers: EmbeddedNode.Format.serializers, hubConfiguration: configuration.hub, publisherGrace: configuration.publisherGrace)
        let group = MultiThreadedEventLoopGroup.singleton
        let router = NodeHTTP.router(metrics: metrics) { bus.isConnected }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        var rtmpDelegate: (any RTMPServerDelegate)?
        var coordinatorStore: CoordinatorStore?
        // Kept alive for the node's lifetime: the actor system holds actors weakly.
        var coordinatorActor: Coordinator?

        switch role {
        case .ingest:
            let kickLogger = logger
            let publications = BusPublications(bus: bus, logger: logger)
            var keys: StreamKeyVerifier?
            if configuration.requireStreamKeys {
                let coordinator = try $CoordinatorAPI.resolve(id: CoordinatorAddress.id(onNode: configuration.coordinatorNode), using: system)
                keys = StreamKeyVerifier(logger: logger) { path, key in
                    try await NodeActorSystem.$callTimeout.withValue(.seconds(1)) {
                        try await coordinator.verifyStreamKey(app: path.app, name: path.name, key: key)
                    }
                }
            }
            rtmpDelegate = NodeRTMPDelegate(admission: PublishAdmission(registry: registry, logger: logger), playback: Playback(registry: registry), keys: keys, logger: logger) { hub in
                await publications.attach(hub)
            }
            HTTPFLVRoutes(registry: registry, flvFormat: EmbeddedNode.Format.flv, logger: logger).register(on: router)
            let reporter = IngestReporter(registry: registry)
            services.append(.init(service: link(system: system, logger: logger, report: { await reporter.report() }) { instruction in
                if case .kick(let app, let name) = instruction, let path = try? StreamPath(app: app, name: name),
                   let hub = await registry.hub(for: path), hub.evictPublisher() {
                    kickLogger.notice("publisher kicked by the coordinator", metadata: ["stream": "\(path)"])
                }
            }))
        case .relay:
            let hls = HLSService(configuration: configuration.hls, group: group, logger: logger)
            let ladders = configuration.ladders
            let source = BusStreamSource(bus: bus, logger: logger)
            await registry.setRemoteSource(source)
            HTTPFLVRoutes(registry: registry, flvFormat: EmbeddedNode.Format.flv, logger: logger).register(on: router)
            // HLS asks for a stream by its source path: open the source and the rungs its
            // application's ladder names, and segment each as a rendition.
            let absent = NegativeCache()
            HLSRoutes(service: hls) { path in
                var candidates = [(path, "src")]
                for rung in ladders[path.app]?.rungs ?? [] {
                    if let rungPath = try? StreamPath(app: path.app, name: "\(path.name)_\(rung.name)") {
                        candidates.append((rungPath, rung.name))
                    }
                }
                for (candidate, rendition) in candidates where !absent.contains(candidate) {
                    guard let hub = await registry.resolve(candidate) else {
                        absent.insert(candidate)
                        continue
                    }
                    if await hls.attach(hub, stream: path, rendition: rendition) {
                        source.addInternalSubscriber(candidate)
                    }
                }
            }.register(on: router)
            rtmpDelegate = NodeRTMPDelegate(admission: nil, playback: Playback(registry: registry), logger: logger)
            services.append(.init(service: link(system: system, logger: logger, report: {
                let streams = await registry.streams
                let reports = streams.map { path, hub in StreamReport.playing(app: path.app, name: path.name, viewers: hub.statistics.subscribers) }
                return .init(load: Double(reports.reduce(0) { $0 + ($1.viewers ?? 0) }), streams: reports)
            }) { _ in }))
        case .transcode:
            // The sources come from the bus like a relay's, and are kept while a job reads them.
            await registry.setRemoteSource(BusStreamSource(bus: bus, logger: logger))
            let transcoding = BusTranscoding(bus: bus, registry: registry, logger: logger)
            services.append(.init(service: link(system: system, logger: logger, report: {
                .init(load: await transcoding.load, streams: await transcoding.reports)
            }) { instruction in
                await transcoding.handle(instruction)
            }))
        case .coordinator:
            let store = try await CoordinatorStore.open(at: configuration.databasePath)
            coordinatorStore = store
            let ladders = configuration.ladders.mapValues { ladder in
                ladder.rungs.map { RungSpec(name: $0.name, width: 0, height: $0.height, bitRate: $0.videoBitRate) }
            }
            let state = try await CoordinatorState.load(store: store, configuration: CoordinatorConfiguration(ladders: ladders), logger: logger)
            coordinatorActor = try system.makeActor(named: CoordinatorAddress.actorName) { Coordinator(state: state, actorSystem: system) }
            // Other nodes reach the actor once its subscription is on the server.
            try? await bus.flush()
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
        case .all:
            throw ConfigurationError.unsupportedRole(role.rawValue)
        }

        if let rtmpDelegate {
            services.append(.init(service: RTMPServer(configuration: configuration.rtmp, delegate: rtmpDelegate, rtmpFormat: EmbeddedNode.Format.rtmp, group: group, logger: logger)))
        }
        services.insert(.init(service: NodeHTTP.application(router: router, configuration: configuration, logger: logger)), at: 0)
        services.append(.init(service: StreamShutdown(registry: registry)))
        let serviceGroup = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        logger.info("Estuary node (role \(role.rawValue), id \(configuration.nodeID)): \(rtmpDelegate == nil ? "" : "RTMP :\(configuration.rtmp.port), ")HTTP :\(configuration.httpPort), bus \(natsConfiguration.servers.joined(separator: ","))")
        try await serviceGroup.run()
        withExtendedLifetime(coordinatorActor) {}
        try? await coordinatorStore?.close()
        await bus.close()
    }

    private func link(
        system: NodeActorSystem,
        logger: Logger,
        report: @escaping @Sendable () async -> CoordinatorLink.Report,
        handle: @escaping @Sendable (NodeInstruction) async -> Void
    ) -> CoordinatorLink {
        CoordinatorLink(
            system: system,
            coordinatorNode: configuration.coordinatorNode,
            nodeID: configuration.nodeID,
            role: role,
            advertiseHost: configuration.advertiseHost,
            logger: logger,
            report: report,
            handle: handle
        )
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
    private let entries = Mutex<[StreamPath: ContinuousClock.Instant]>([:])

    func contains(_ path: StreamPath) -> Bool {
        entries.withLock { entries in
            guard let expiry = entries[path] else { return false }
            if expiry < .now {
                entries[path] = nil
                return false
            }
            return true
        }
    }

    func insert(_ path: StreamPath) {
        entries.withLock { $0[path] = .now + .seconds(2) }
    }
}
