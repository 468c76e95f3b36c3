import Logging
import Media
import Transcode

/// Feeds a source hub into a transcode pipeline: an inline `FrameSubscription`, drained on
/// the publisher's thread at each wake-up (`submit` only appends to the pipeline's bounded
/// inbox; all decoding and encoding happens on the pipeline's own threads). When the
/// source ends, the pipeline is finished and `finished` runs.
enum TranscodeFeed {
    /// Returns nil (and finishes the pipeline) when the hub had ended already.
    @discardableResult
    static func start(
        hub: StreamHub,
        pipeline: TranscodePipeline,
        logger: Logger,
        finished: @escaping @Sendable (TranscodeStatistics) async -> Void
    ) -> FrameSubscription? {
        // The feed keeps its source open: on a transcoder, the source is a bus mirror that
        // nobody plays, and it would otherwise be let go as unwatched after its idle grace,
        // ending the rungs (and dropping their viewers) every few seconds.
        let subscription = FrameSubscription.start(on: hub, delivery: .inline { batch in
            for frame in batch.frames { pipeline.submit(frame) }
            if batch.ended {
                Task {
                    let statistics = await pipeline.finish()
                    logger.info("transcoding ended: \(statistics.framesIn) frames in, \(statistics.lagDroppedFrames) dropped for lag, \(statistics.corruptFrames) corrupt")
                    await finished(statistics)
                }
            }
        }, keepsStreamOpen: true)
        guard let subscription else {
            Task {
                let statistics = await pipeline.finish()
                await finished(statistics)
            }
            return nil
        }
        return subscription
    }
}
