import Hummingbird
import Ingest
import Logging
import Media
import NIOCore
import NIOPosix
import Prometheus
import RTMP
import Relay
import ServiceLifecycle
import UnixSignals

/// `--role all`: ingest and relay in one process, sharing one stream registry.
struct EmbeddedNode {
    /// The hubs' output formats, by index: every frame is serialised at most once into each.
    enum Format {
        static let flv = 0
        static let rtmp = 1
        static var serializers: [any FrameSerializer] { [FLVTagSerializer(), RTMPChunkSerializer()] }
    }

    let configuration: NodeConfiguration
    let metrics: PrometheusCollectorRegistry

    func run() async throws {
        let logger = Logger(label: "estuary")
        let registry = StreamRegistry(serializers: Format.serializers, hubConfiguration: configuration.hub, publisherGrace: configuration.publisherGrace)
        let admission = PublishAdmission(registry: registry, logger: logger)
        let playback = Playback(registry: registry)
        let group = MultiThreadedEventLoopGroup.singleton
        let hls = HLSService(configuration: configuration.hls, group: group, logger: logger)
        let transcoding = EmbeddedTranscoding(ladders: configuration.ladders, registry: registry, hls: hls, logger: logger)

        let rtmp = RTMPServer(
            configuration: configuration.rtmp,
            delegate: NodeRTMPDelegate(admission: admission, playback: playback, logger: logger) { hub in
                // Every accepted stream is segmented for HLS and, if its application has a
                // ladder, transcoded.
                await hls.attach(hub)
                await transcoding.attach(hub)
            },
            rtmpFormat: Format.rtmp,
            group: group,
            logger: logger
        )

        let router = NodeHTTP.router(metrics: metrics)
        HTTPFLVRoutes(registry: registry, flvFormat: Format.flv, logger: logger).register(on: router)
        HLSRoutes(service: hls).register(on: router)
        let http = NodeHTTP.application(router: router, configuration: configuration, logger: logger)

        // Graceful shutdown runs in reverse order: streams end first (viewers get a clean
        // end of stream), then the listeners close.
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
        logger.info("Estuary node (role all): RTMP :\(configuration.rtmp.port), HTTP :\(configuration.httpPort)")
        try await services.run()
    }
}

/// Ends every stream when the node shuts down, so that viewers (including endless
/// HTTP-FLV responses) finish cleanly before the listeners stop.
struct StreamShutdown: Service {
    let registry: StreamRegistry

    func run() async throws {
        try? await gracefulShutdown()
        await registry.endAll()
    }
}
