import Cluster
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
        let registry = StreamRegistry(serializers: EmbeddedNode.Format.serializers, hubConfiguration: configuration.hub, publisherGrace: configuration.publisherGrace)
        let group = MultiThreadedEventLoopGroup.singleton
        let router = NodeHTTP.router(metrics: metrics) { bus.isConnected }
        HTTPFLVRoutes(registry: registry, flvFormat: EmbeddedNode.Format.flv, logger: logger).register(on: router)

        let delegate: any RTMPServerDelegate
        switch role {
        case .ingest:
            let publications = BusPublications(bus: bus, logger: logger)
            delegate = IngestRTMPDelegate(admission: PublishAdmission(registry: registry, logger: logger), playback: Playback(registry: registry), publications: publications)
        case .relay:
            let hls = HLSService(configuration: configuration.hls, group: group, logger: logger)
            let ladders = configuration.ladders
            let source = BusStreamSource(bus: bus, logger: logger)
            await registry.setRemoteSource(source)
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
            delegate = RelayRTMPDelegate(playback: Playback(registry: registry))
        case .all, .transcode, .coordinator:
            throw ConfigurationError.unsupportedRole(role.rawValue)
        }

        let rtmp = RTMPServer(configuration: configuration.rtmp, delegate: delegate, rtmpFormat: EmbeddedNode.Format.rtmp, group: group, logger: logger)
        let http = NodeHTTP.application(router: router, configuration: configuration, logger: logger)
        let services = ServiceGroup(
            configuration: .init(
                services: [
                    .init(service: http),
                    .init(service: rtmp),
                    .init(service: StreamShutdown(registry: registry)),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        logger.info("Estuary node (role \(role.rawValue), id \(configuration.nodeID)): RTMP :\(configuration.rtmp.port), HTTP :\(configuration.httpPort), bus \(natsConfiguration.servers.joined(separator: ","))")
        try await services.run()
        await bus.close()
    }
}

/// Ingest: publish through admission, then onto the bus; play what is published here.
struct IngestRTMPDelegate: RTMPServerDelegate {
    let admission: PublishAdmission
    let playback: Playback
    let publications: BusPublications

    func publish(_ request: RTMPPublishRequest) async -> RTMPPublishDecision {
        let decision = await admission.publish(request)
        if case .accept(let hub, _) = decision {
            await publications.attach(hub)
        }
        return decision
    }

    func unpublished(_ path: StreamPath, id: StreamHub.PublisherID) async {
        await admission.unpublished(path, id: id)
    }

    func play(_ request: RTMPPlayRequest) async -> RTMPPlayDecision {
        await playback.play(request)
    }
}

/// Relay: plays streams from the bus; publishing goes to an ingest node.
struct RelayRTMPDelegate: RTMPServerDelegate {
    let playback: Playback

    func publish(_ request: RTMPPublishRequest) async -> RTMPPublishDecision {
        .reject(code: "NetStream.Publish.BadName", description: "this node is a relay: publish to an ingest node")
    }

    func unpublished(_ path: StreamPath, id: StreamHub.PublisherID) async {}

    func play(_ request: RTMPPlayRequest) async -> RTMPPlayDecision {
        await playback.play(request)
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
