import Logging
import Synchronization
import Media
import Transcode

/// Feeds a source hub into a transcode pipeline: an inline `FrameSubscription`, drained on
/// the publisher's thread at each wake-up (`submit` only appends to the pipeline's bounded
/// inbox; all decoding and encoding happens on the pipeline's own threads). When the
/// source ends, the pipeline is finished and `finished` runs. With `joinAtLiveEdge` (a
/// transcoder whose rungs go to relays, which may already hold a moved job's earlier
/// output), encoding starts at the newest picture of the GOP it joins with rather than at the
/// GOP's keyframe: the first rung keyframe is then newer than what relays hold, a moment
/// off the source's keyframes until its next one.
enum TranscodeFeed {
    /// Returns nil (and finishes the pipeline) when the hub had ended already.
    @discardableResult
    static func start(
        hub: StreamHub,
        pipeline: TranscodePipeline,
        logger: Logger,
        joinAtLiveEdge: Bool = false,
        observe: (@Sendable (MediaFrame) -> Void)? = nil,
        finished: @escaping @Sendable (TranscodeStatistics) async -> Void
    ) -> FrameSubscription? {
        // The feed keeps its source open: on a transcoder, the source is a bus mirror that
        // nobody plays, and it would otherwise be let go as unwatched after its idle grace,
        // ending the rungs (and dropping their viewers) every few seconds.
        let joined = Atomic<Bool>(false)
        let subscription = FrameSubscription.start(on: hub, delivery: .inline { batch in
            // The first batch is what a joining viewer gets: the cached GOP of a live stream.
            // Encoding starts at its newest picture (`TranscodePipeline.encode(from:)`).
            if joinAtLiveEdge, !joined.exchange(true, ordering: .relaxed),
               let newest = batch.frames.last(where: { $0.kind == .video && !$0.isSequenceHeader }) {
                pipeline.encode(from: newest.timestamp)
            }
            for frame in batch.frames {
                // Seen before the pipeline has it (a handover's cut must be known before
                // the rungs' frames at it come out).
                observe?(frame)
                pipeline.submit(frame)
            }
            if batch.ended {
                Task {
                    let statistics = await pipeline.finish()
                    logger.info("transcoding ended: \(statistics.framesIn) frames in, \(statistics.lagDroppedFrames) dropped for lag, \(statistics.corruptFrames) corrupt")
                    LargeAllocations.returnFreedPages()
                    await finished(statistics)
                }
            }
        }, keepsStreamOpen: true)
        guard let subscription else {
            Task {
                let statistics = await pipeline.finish()
                LargeAllocations.returnFreedPages()
                await finished(statistics)
            }
            return nil
        }
        return subscription
    }
}
