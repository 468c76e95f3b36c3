import Logging
import Media
import Relay
import Transcode

/// Starts an ABR transcode for every stream published to an application that has a ladder
/// (by default `abr`), and makes each rung a rendition everywhere the source plays: a hub
/// in the registry (`rtmp://host/abr/demo_480p`, `/abr/demo_480p.flv`) and an HLS rendition
/// of the source (`/abr/demo/480p/…`, listed in both master playlists).
///
/// The pipeline is fed by a raw-frame hub subscriber, drained on the publisher's thread at
/// each wake-up: `submit` only appends to the pipeline's bounded inbox, and all decoding and
/// encoding happens on the pipeline's own thread.
actor EmbeddedTranscoding {
    private let ladders: [String: Ladder]
    private let registry: StreamRegistry
    private let hls: HLSService
    private let logger: Logger
    private var running: Set<ObjectIdentifier> = []

    init(ladders: [String: Ladder], registry: StreamRegistry, hls: HLSService, logger: Logger) {
        self.ladders = ladders
        self.registry = registry
        self.hls = hls
        self.logger = logger
    }

    /// Starts transcoding `hub` if its application has a ladder and it is not running yet.
    func attach(_ hub: StreamHub) {
        guard let ladder = ladders[hub.path.app], !ladder.rungs.isEmpty else { return }
        let id = ObjectIdentifier(hub)
        guard running.insert(id).inserted else { return }
        let source = hub.path
        let registry = registry
        let hls = hls
        var streamLogger = logger
        streamLogger[metadataKey: "stream"] = "\(source)"
        let logger = streamLogger
        let pipeline: TranscodePipeline
        do {
            pipeline = try TranscodePipeline(
                source: source,
                configuration: .init(ladder: ladder),
                serializers: registry.serializers,
                logger: logger
            ) { rendition in
                Task {
                    await registry.register(rendition.hub)
                    await hls.attach(rendition.hub, stream: source, rendition: rendition.plan.rung.name)
                }
            }
        } catch {
            logger.error("cannot start transcoding: \(error)")
            running.remove(id)
            return
        }
        logger.info("transcoding with ladder \(ladder.rungs.map(\.name).joined(separator: ","))")

        TranscodeFeed.start(hub: hub, pipeline: pipeline, logger: logger) { _ in
            await self.finished(id)
        }
    }

    private func finished(_ id: ObjectIdentifier) {
        running.remove(id)
    }
}
