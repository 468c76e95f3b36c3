import Logging
import Media
import RTMP
import Relay
import ServiceLifecycle
import Session

/// The protocols a node with an ingest or a relay serves, all behind one admission path
/// (`NodeAdmission`): RTMP (publish and play) and HTTP-FLV and HLS (play). The ingest
/// brings publish admission, the relay playback and HLS; every session's events go to the
/// observers both bring, plus the session metrics.
struct ListenerAssembly {
    let admission: NodeAdmission
    let services: [ServiceGroupConfiguration.ServiceConfiguration]

    init(_ context: NodeContext, ingest: IngestAssembly?, relay: RelayAssembly?) {
        let configuration = context.configuration
        admission = NodeAdmission(
            admission: ingest?.admission, playback: relay?.playback ?? Playback(registry: context.registry),
            keys: ingest?.keys, logger: context.logger,
            ladders: configuration.ladders, maxStreams: configuration.maxStreams,
            transcodes: TranscodeSlots(limit: configuration.maxTranscodes),
            drain: context.drain,
            // In order: HLS segments a stream before the bus and the coordinator hear of it.
            observers: [SessionMetrics()] + (relay?.observers ?? []) + (ingest?.observers ?? []) + [context.drain]
        )
        PlaybackRoutes(flv: HTTPFLVRoutes(admission: admission, logger: context.logger), hls: relay?.routes)
            .register(on: context.router)
        services = [.init(service: RTMPServer(configuration: configuration.rtmp, admission: admission, group: context.group, logger: context.logger))]
    }
}
