import Media
import NIOConcurrencyHelpers

/// An `estuary://` upstream: the stream fetched over the cluster's bus into a mirror hub
/// of the edge's own (a private registry, so the edge's viewers never see it directly), and
/// read from there like any upstream connection. The subscription counts as a viewer of the
/// mirror, which the bus source keeps for as long as the edge reads it.
struct HubFeed: UpstreamFeed {
    let hub: StreamHub

    func run(_ deliver: @escaping @Sendable ([MediaFrame]) -> Void) async throws {
        let (wakes, waker) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let pending = NIOLockedValueBox<(@Sendable () -> FrameSubscription.Batch)?>(nil)
        guard let subscription = FrameSubscription.start(on: hub, delivery: .wake { drain in
            pending.withLockedValue { $0 = drain }
            waker.yield()
        }, countsAsViewer: true) else {
            return
        }
        defer {
            subscription.cancel()
            waker.finish()
        }
        // Ends when the task is cancelled (the pull moves on or stops), or with the stream.
        for await _ in wakes {
            guard let drain = pending.withLockedValue({ current in
                defer { current = nil }
                return current
            }) else { continue }
            let batch = drain()
            if !batch.frames.isEmpty { deliver(batch.frames) }
            if batch.ended { return }
        }
    }
}
