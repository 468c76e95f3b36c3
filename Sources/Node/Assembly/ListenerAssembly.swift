import Cluster
import Coordinator
import Edge
import Hooks
import Hummingbird
import Ingest
import Logging
import Media
import RTMP
import Relay
import SRT
import ServiceLifecycle
import Session

/// The protocols a node with an ingest or a relay serves, all behind one admission path
/// (`NodeAdmission`): RTMP (publish and play) and HTTP-FLV and HLS (play). The ingest
/// brings publish admission, the relay playback and HLS; every session's events go to the
/// observers both bring, plus the session metrics.
struct ListenerAssembly {
    let admission: NodeAdmission
    /// Every live session, for `/api/v1/sessions`.
    let sessions: SessionTable
    /// The table as the coordinator asks it (`SessionsAPI`).
    let sessionsNode: NodeSessions
    let services: [ServiceGroupConfiguration.ServiceConfiguration]
    /// The static pulls (`pulls`), where the node takes publishers.
    let pulls: StaticPulls?

    init(_ context: NodeContext, ingest: IngestAssembly?, relay: RelayAssembly?) throws {
        let configuration = context.configuration
        let sessions = context.sessions
        self.sessions = sessions
        let system = context.system
        sessionsNode = try system.makeActor(named: RoleAddress.sessions) { NodeSessions(table: sessions, actorSystem: system) }
        // Signed URLs' expiry kicks live sessions; hooks hear every end. Both are in place
        // whether configured or not, so that a reload can turn them on.
        let expiry = TokenExpiry(logger: context.logger)
        expiry.start()
        let hookCaller = HookCaller()
        let hooks = Reloadable(configuration.hooks)
        let policies = AdmissionPolicies(
            drain: context.drain, keys: ingest?.keys, registry: ingest?.admission.registry,
            transcodes: TranscodeSlots(limit: configuration.maxTranscodes), expiry: expiry,
            hookCaller: hookCaller, clusterPublications: ingest?.clusterPublications, clusterClaim: ingest?.clusterClaim, nodeID: configuration.nodeID, logger: context.logger
        )
        let notifications = WebhookNotifications(hooks: hooks, notifier: HookNotifier(caller: hookCaller, logger: context.logger), nodeID: configuration.nodeID)
        admission = NodeAdmission(
            admission: ingest?.admission, playback: relay?.playback ?? Playback(registry: context.registry, logger: context.logger, codecWait: configuration.playCodecWait),
            logger: context.logger,
            policies: policies.make(configuration, tokens: context.tokens),
            // In order: HLS segments a stream before the bus and the coordinator hear of it.
            observers: [SessionMetrics(), sessions] + (relay?.observers ?? []) + (ingest?.observers ?? []) + [notifications, expiry, context.drain]
        )
        // The clients' protocols get their decisions within the admission timeout.
        let logger = context.logger
        let timed = TimeLimitedAdmission(admission, timeout: configuration.admissionTimeout) { kind, path in
            logger.warning("\(kind) refused: no admission decision within the timeout", metadata: ["stream": "\(path)"])
            NodeMetrics.admissionTimeouts(kind: kind.rawValue)
        }
        relay?.hlsSessions.setAdmission(timed)
        PlaybackRoutes(flv: HTTPFLVRoutes(admission: timed, logger: context.logger), hls: relay?.routes)
            .register(on: context.router)
        let rtmp = RTMPServer(configuration: configuration.rtmp, admission: timed, group: context.group, logger: context.logger)
        let rtmps: RTMPServer?
        if let tls = context.tls, let port = configuration.rtmpsPort {
            // RTMPS: the same connections behind TLS, each taking the certificate current at its accept.
            var secure = configuration.rtmp
            secure.port = port
            rtmps = RTMPServer(configuration: secure, admission: timed, group: context.group, logger: context.logger, name: "RTMPS") { channel in
                try tls.addServerHandlers(to: channel.pipeline.syncOperations, listener: "rtmps")
            }
        } else {
            rtmps = nil
        }
        // A reload: new policies for the requests that come, new limits for the connections
        // accepted from now on. Sessions already admitted keep what they were admitted with.
        let admission = admission
        context.live.subscribe { new, tokens in
            admission.policies = policies.make(new, tokens: tokens)
            hooks.set(new.hooks)
            timed.setTimeout(new.admissionTimeout)
            rtmp.reconfigure(new.rtmp)
            rtmps?.reconfigure(new.rtmp)
        }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: rtmp)] + (rtmps.map { [.init(service: $0)] } ?? [])
            + (relay.map { [ServiceGroupConfiguration.ServiceConfiguration(service: HLSSessionSweeper(sessions: $0.hlsSessions))] } ?? [])
        // SRT publishers (where the node takes them) and players: libsrt's threads, the same
        // admission. A relay or an edge serves SRT players from the streams it mirrors.
        if ingest != nil || relay != nil, let port = configuration.srtPort {
            var srt = SRTListener.Configuration(host: configuration.bindHost, port: port)
            srt.latencyMilliseconds = configuration.srtLatencyMilliseconds
            srt.passphrase = configuration.srtPassphrase
            srt.maxPublishers = configuration.srtMaxPublishers
            srt.maxPlayers = configuration.srtMaxPlayers
            srt.maxCallersPerAddress = configuration.srtMaxCallersPerAddress
            srt.handshakeWait = configuration.srtHandshakeWaitMilliseconds.map { .milliseconds($0) }
            srt.limitLoopback = configuration.rtmp.connectionLimits.limitLoopback
            // The node's own limit decides first (and ends a late decision's session); the
            // caller's thread waits a little longer than it.
            srt.admissionTimeout = configuration.admissionTimeout + .seconds(1)
            srt.takesPublishers = ingest != nil
            let registry = context.registry
            // Where streams are mirrored on demand (a cluster's bus, an edge's upstreams), a
            // play of one not here yet is let through the handshake for the admission to find.
            let fetches = context.remote != nil
            let listener = SRTListener(configuration: srt, admission: timed, isLive: { fetches || registry.knowsLocally($0) }, logger: context.logger)
            services.append(.init(service: SRTListenerService(listener: listener)))
        }
        // Static pulls publish through the node's admission, like any publisher; made with
        // or without pulls configured (a reload may add some), where the node takes publishers.
        if ingest != nil {
            let pulls = StaticPulls(configuration.pulls, admission: admission, logger: context.logger)
            context.live.subscribe { new, _ in
                await pulls.update(new.pulls)
            }
            self.pulls = pulls
            // They stop before the streams end.
            services.append(.init(service: StaticPullsService(pulls: pulls)))
        } else {
            pulls = nil
        }
        self.services = services
    }
}

/// Runs the SRT listener from the node's start to its shutdown; a port that cannot be bound
/// ends the node, as for every listener.
struct SRTListenerService: Service {
    let listener: SRTListener

    func run() async throws {
        do {
            try listener.start()
        } catch {
            let address = "\(listener.configuration.host):\(listener.configuration.port)"
            throw NodeStartupError.cannotListen("SRT", address, flag: "--srt-port", error.description)
        }
        try? await gracefulShutdown()
        listener.stop()
    }
}

/// Stops the static pulls when the node shuts down.
struct StaticPullsService: Service {
    let pulls: StaticPulls

    func run() async throws {
        try? await gracefulShutdown()
        await pulls.stop()
    }
}

/// Ends HLS sessions whose player stopped asking (`HLSSessions.expire`), every second.
struct HLSSessionSweeper: Service {
    let sessions: HLSSessions

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await sessions.run()
        }
    }
}
