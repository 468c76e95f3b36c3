import Cluster
import Coordinator
import Edge
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
import Tokens
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
/// - `edge`: serves players like a relay, from streams it pulls from `--upstream` servers
///   (HTTP-FLV, RTMP, or with `--nats` the cluster's bus) while they are watched
///   (`EdgeStreamSource`), failing over between them; in a cluster it registers with the
///   coordinator (`EdgeNode`).
///
/// Every node answers `/healthz`, `/readyz` (ready while the bus is connected) and
/// `/metrics`.
struct NodeRuntime {
    let role: NodeRole
    let configuration: NodeConfiguration
    let metrics: PrometheusCollectorRegistry
    /// Reads the configuration again on a reload (`ConfigurationReloader`).
    let loader: ConfigurationLoader
    /// The settings as the file, the environment and the flags gave them.
    let resolved: NodeConfigurationFile

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
        let context = try await makeContext()
        let roles = context.roles
        // Each role's parts, built in the order they call each other: the coordinator first
        // (the others call it as they start), the relay's HLS before the transcoder that
        // feeds it, the listeners once both halves of the admission exist.
        let coordinator = roles.contains(.coordinator) ? try await CoordinatorAssembly(context) : nil
        // An edge plays like a relay; only where its streams come from differs (`context.remote`).
        let relay = roles.contains(.relay) || roles.contains(.edge) ? try RelayAssembly(context) : nil
        let ingest = roles.contains(.ingest) ? try IngestAssembly(context) : nil
        let transcode = roles.contains(.transcode) ? try TranscodeAssembly(context) : nil
        let listeners = ingest != nil || relay != nil ? try ListenerAssembly(context, ingest: ingest, relay: relay) : nil
        // A transcoder that also plays publishes its rungs through the listeners' admission.
        if let listeners { transcode?.renditions.set(listeners.admission) }
        // Forwards are sessions of that admission too (protocol `forward`).
        if let listeners, let forwards = ingest?.forwards { await forwards.attach(listeners.admission) }
        // An edge in a cluster reports its pulls to the coordinator (`EdgeNode`).
        let edge = try Self.edgeNode(context)
        let link = Self.isLinked(roles, clustered: context.nats != nil)
            ? CoordinatorLinkAssembly(context, ingest: ingest, transcode: transcode, relay: relay, edge: edge) : nil

        let configuration = context.configuration
        let logger = context.logger
        // A reload: new hubs take the new hub settings, the coordinator the new ladders.
        let registry = context.registry
        context.live.subscribe { new, _ in
            registry.reconfigure(hubConfiguration: new.hub, publisherGrace: new.publisherGrace)
        }
        if let state = coordinator?.state {
            context.live.subscribe { new, _ in
                await state.setLadders(CoordinatorAssembly.rungSpecs(new.ladders))
            }
        }
        let reloader = try await ConfigurationReloader.make(loader: loader, live: context.live, logger: logger)
        // With a grace period, SIGTERM drains (`DrainService`); without, it stops at once.
        let sigtermDrains = configuration.drainGrace > .zero
        let drainDefaults = NodeDrain.Request(grace: configuration.drainGrace, reconnectTo: configuration.drainReconnectTo, reason: "SIGTERM")
        // The admin API (docs/openapi.yaml), each operation answered by the part that owns it here.
        let adminAPI = NodeAdminAPI(
            coordinator: coordinator.map { CoordinatorAdminAPI(state: $0.state) }, sessions: listeners?.sessions,
            drain: context.drain, drainDefaults: drainDefaults, forwards: ingest?.forwards, pulls: listeners?.pulls
        )
        try AdminAPIRoutes.register(adminAPI, on: context.adminRouter, token: configuration.adminToken, logger: logger)
        let drainService = DrainService(drain: context.drain, onSigterm: sigtermDrains ? drainDefaults : nil, logger: logger)
        // A group stops its services in the reverse of this order: the beacon first here,
        // so it stops last and its leave comes after everything else has wound down.
        let services: [ServiceGroupConfiguration.ServiceConfiguration] =
            [.init(service: LivenessBeaconService(beacon: LivenessBeacon(bus: context.bus, nodeID: configuration.nodeID)))]
            + [.init(service: HTTPListener(
                name: "HTTP", address: "\(configuration.bindHost):\(configuration.httpPort)", flag: "--http-port",
                application: NodeHTTP.application(router: context.router, configuration: configuration, logger: logger, live: context.live)
            ))]
            + [.init(service: HTTPListener(
                name: "the admin plane", address: "\(configuration.adminHost):\(configuration.adminPort)", flag: "--admin-port",
                application: NodeHTTP.application(router: context.adminRouter, configuration: configuration, logger: logger, host: configuration.adminHost, port: configuration.adminPort, live: context.live)
            ))]
            + (context.tls.flatMap { tls in configuration.httpsPort.map { port in
                ServiceGroupConfiguration.ServiceConfiguration(service: HTTPListener(
                    name: "HTTPS", address: "\(configuration.bindHost):\(port)", flag: "--https-port",
                    application: NodeHTTP.application(router: context.router, configuration: configuration, logger: logger, tls: tls, port: port, live: context.live)
                ))
            } }.map { [$0] } ?? [])
            + [.init(service: CertificateReloadService(certificates: context.tls, logger: logger))]
            + (reloader.map { [ServiceGroupConfiguration.ServiceConfiguration(service: $0)] } ?? [])
            + (coordinator?.services ?? []) + (listeners?.services ?? []) + (link?.services ?? [])
            + [.init(service: StreamShutdown(registry: context.registry))]
            + [.init(service: StreamMetricsSampler(registry: context.registry, sessions: context.sessions))]
            + [.init(service: drainService, successTerminationBehavior: .gracefullyShutdownGroup)]
        let serviceGroup = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: sigtermDrains ? [.sigint] : [.sigterm, .sigint], logger: logger))
        let listens = listeners != nil ? "RTMP :\(configuration.rtmp.port), " : ""
        let busName = configuration.nats?.redactedServers ?? "in-process"
        logger.info("Estuary node (role \(role.rawValue), id \(configuration.nodeID)): \(listens)HTTP :\(configuration.httpPort), admin \(configuration.adminHost):\(configuration.adminPort), bus \(busName)")
        do {
            try await serviceGroup.run()
        } catch let error as RTMPListenerBindError {
            throw NodeStartupError.cannotListen("RTMP", "\(error.host):\(error.port)", flag: "--rtmp-port", Self.reason(error.underlying))
        }
        // The actor system holds actors weakly: the assemblies keep them until here.
        withExtendedLifetime((coordinator?.actor, ingest?.node, transcode?.worker, relay?.node, edge, listeners?.sessionsNode)) {}
        await coordinator?.close()
        if let nats = context.nats {
            await nats.close()
        } else {
            (context.bus as? LocalBus)?.close()
        }
    }

    /// The bus, actor system, registry and router the roles share.
    private func makeContext() async throws -> NodeContext {
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
            guard role == .all || role == .edge else { throw ConfigurationError.needsBus(role.rawValue) }
            nats = nil
            bus = LocalBus()
        }
        let coordinatorNode = roles.contains(.coordinator) ? configuration.nodeID : configuration.coordinatorNode
        let system = try NodeActorSystem(nodeID: configuration.nodeID, bus: bus, logger: logger)
        let registry = StreamRegistry(serializers: [HTTPFLVChunkSerializer(), RTMPChunkSerializer()], hubConfiguration: configuration.hub, publisherGrace: configuration.publisherGrace)
        // Streams of other nodes, mirrored on demand; a node alone has none to find, an edge
        // pulls from its upstreams.
        let remote: (any RemoteStreamSource)?
        if roles.contains(.edge) {
            // In a cluster, `estuary://` upstreams fetch over the bus, as a relay does.
            let cluster = nats != nil ? BusStreamSource(bus: bus, logger: logger) : nil
            remote = EdgeStreamSource(upstreams: configuration.upstreams, cluster: cluster, logger: logger)
        } else if nats != nil, roles.contains(.relay) || roles.contains(.transcode) {
            remote = BusStreamSource(bus: bus, logger: logger)
        } else {
            remote = nil
        }
        await registry.setRemoteSource(remote)
        // Ready: the bus is connected and, for a node with a coordinator link, the coordinator
        // has answered at least once.
        let coordinatorStatus = CoordinatorLink.Status()
        let linked = Self.isLinked(roles, clustered: nats != nil)
        let drain = NodeDrain(logger: logger)
        let ready: @Sendable () -> Bool = {
            (nats?.isConnected ?? true) && (!linked || coordinatorStatus.hasAnswered) && !drain.isDraining
        }
        let router = NodeHTTP.router(ready: ready)
        let adminRouter = NodeHTTP.adminRouter(metrics: metrics, ready: ready)
        return NodeContext(
            role: role, roles: roles, configuration: configuration, logger: logger,
            nats: nats, bus: bus, system: system, registry: registry, remote: remote,
            router: router, adminRouter: adminRouter, group: MultiThreadedEventLoopGroup.singleton,
            coordinatorNode: coordinatorNode,
            coordinator: try $CoordinatorAPI.resolve(id: CoordinatorAddress.id(onNode: coordinatorNode), using: system),
            coordinatorStatus: coordinatorStatus, drain: drain, sessions: SessionTable(logger: logger),
            tokens: try await Self.tokenVerifier(configuration, logger: logger),
            tls: try Self.certificates(configuration, logger: logger),
            live: LiveConfiguration(configuration, resolved: resolved)
        )
    }

    /// The RTMPS and HTTPS certificate, read once here (a file that cannot be used stops
    /// the start, with the file and the reason).
    static func certificates(_ configuration: NodeConfiguration, logger: Logger) throws -> TLSCertificates? {
        guard let certificate = configuration.tlsCertificateFile, let key = configuration.tlsKeyFile else { return nil }
        do {
            return try TLSCertificates(certificateFile: certificate, keyFile: key, logger: logger)
        } catch {
            throw ConfigurationError.invalidValue("tls: \(error)")
        }
    }

    /// The signed-URL checks of `tokens`, keys parsed and JWKS URLs fetched; nil without
    /// any. With `requireRemoteKeys` (`--check-config`) a JWKS URL that cannot be fetched is
    /// an error; otherwise it is logged and asked again (tokens only it could verify are
    /// refused as unavailable meanwhile).
    static func tokenVerifier(_ configuration: NodeConfiguration, requireRemoteKeys: Bool = false, logger: Logger? = nil) async throws -> TokenVerifier? {
        guard !configuration.tokens.isEmpty else { return nil }
        do {
            let verifier = try await TokenVerifier.make(configuration.tokens, requireRemoteKeys: requireRemoteKeys)
            for failure in verifier.remoteFailures {
                logger?.error("\(failure); asked again on demand, tokens it alone would verify are refused as unavailable meanwhile")
            }
            return verifier
        } catch {
            throw ConfigurationError.invalidValue(error.description)
        }
    }

    /// Whether the process's roles report to a coordinator: every role but the coordinator
    /// itself; an edge only when it joined a cluster (`--nats`).
    static func isLinked(_ roles: Set<NodeRole>, clustered: Bool) -> Bool {
        !roles.subtracting([.coordinator, .edge]).isEmpty || (roles.contains(.edge) && clustered)
    }

    /// The `EdgeNode` actor of an edge in a cluster; nil otherwise.
    private static func edgeNode(_ context: NodeContext) throws -> EdgeNode? {
        guard context.nats != nil, let source = context.remote as? EdgeStreamSource else { return nil }
        let system = context.system
        return try system.makeActor(named: RoleAddress.edge) { EdgeNode(source: source, actorSystem: system) }
    }

    /// The system's words for a socket error (`Address already in use`), without NIO's call name.
    static func reason(_ error: any Error) -> String {
        if let io = error as? IOError { return String(cString: strerror(io.errnoCode)) }
        return "\(error)"
    }
}
