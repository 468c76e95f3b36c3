import Logging
import Media
import Transcode

/// Feeds a source hub into a transcode pipeline: a raw-frame subscriber drained on the
/// publisher's thread at each wake-up (`submit` only appends to the pipeline's bounded
/// inbox; all decoding and encoding happens on the pipeline's own threads). When the
/// source ends, the pipeline is finished and `finished` runs.
enum TranscodeFeed {
    /// Returns false (and finishes the pipeline) when the hub had ended already.
    @discardableResult
    static func start(
        hub: StreamHub,
        pipeline: TranscodePipeline,
        logger: Logger,
        finished: @escaping @Sendable (TranscodeStatistics) async -> Void
    ) -> HubSubscriber? {
        let subscriber = HubSubscriber(format: nil, maxQueueBytes: hub.configuration.subscriberQueueBytes, coalescesWakeUps: false) { subscriber in
            let batch = subscriber.drain()
            for packet in batch.packets { pipeline.submit(packet.frame) }
            if batch.ended {
                Task {
                    let statistics = await pipeline.finish()
                    logger.info("transcoding ended: \(statistics.framesIn) frames in, \(statistics.lagDroppedFrames) dropped for lag, \(statistics.corruptFrames) corrupt")
                    await finished(statistics)
                }
            }
        }
        guard hub.subscribe(subscriber) else {
            Task {
                let statistics = await pipeline.finish()
                await finished(statistics)
            }
            return nil
        }
        return subscriber
    }
}
