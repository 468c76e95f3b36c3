import Synchronization

/// What a hub's subscribers lost to overflow, all of them together: times one skipped to the
/// next keyframe and the media frames it dropped doing so. Counted by each subscriber on its
/// (rare) skip path, read by `StreamHub.statistics` for the per-stream metrics.
final class HubLossCounters: Sendable {
    private let skips = Atomic<Int>(0)
    private let droppedFrames = Atomic<Int>(0)

    func record(droppedFrames dropped: Int) {
        skips.add(1, ordering: .relaxed)
        droppedFrames.add(dropped, ordering: .relaxed)
    }

    var totals: (skips: Int, droppedFrames: Int) {
        (skips.load(ordering: .relaxed), droppedFrames.load(ordering: .relaxed))
    }
}
