/// A hub's frames themselves, for the pipelines that mux, forward or decode them (the HLS
/// segmenter, the bus publication, the transcoder feed), as opposed to viewers, which read
/// serialised bytes (`HubSubscriber` with an `OutputFormat`).
///
/// Like a viewer's, its queue starts with what a new viewer gets (metadata, configuration
/// records, the cached GOP) and is bounded in bytes (`HubConfiguration.subscriberQueueBytes`):
/// a stalled pipeline skips to the next keyframe instead of pinning media. Unlike a
/// viewer's, its wake-ups are never coalesced, because a pipeline's latency adds to that of
/// all its own viewers, and it does not count as a viewer.
public final class FrameSubscription: Sendable {
    /// Frames in hub order; `ended` when the stream has ended after them.
    public struct Batch: Sendable {
        public var frames: [MediaFrame]
        public var ended: Bool
    }

    /// How the frames reach the consumer.
    public enum Delivery: Sendable {
        /// Drained on the publisher's thread as soon as frames arrive and handed over. The
        /// closure must only append to a bounded inbox of its own (a NATS connection's
        /// buffer, a transcoder's queue): it runs inside the publisher's read.
        case inline(@Sendable (Batch) -> Void)
        /// The closure is told (on the publisher's thread) that frames wait, with the function
        /// that takes them; the consumer calls it on its own thread. Until it does, the hub's
        /// byte bound applies, so a slow consumer costs itself frames, not memory.
        case wake(@Sendable (_ drain: @escaping @Sendable () -> Batch) -> Void)
    }

    private let hub: StreamHub
    private let subscriber: HubSubscriber

    private init(hub: StreamHub, subscriber: HubSubscriber) {
        self.hub = hub
        self.subscriber = subscriber
    }

    /// Subscribes to `hub`; nil when the hub has ended already (nothing will be delivered).
    /// A pipeline is not a viewer; a subscription that stands for viewers elsewhere (an
    /// edge reading a cluster's stream for its own players) is, with `countsAsViewer`, so
    /// that the hub is kept while it reads. A pipeline that stands for consumers elsewhere
    /// without being a player here (a transcoder's feed, a forward) keeps an on-demand hub
    /// open with `keepsStreamOpen`, and is still not counted as a viewer.
    public static func start(
        on hub: StreamHub, delivery: Delivery, countsAsViewer: Bool = false, keepsStreamOpen: Bool = false
    ) -> FrameSubscription? {
        let subscriber: HubSubscriber
        switch delivery {
        case .inline(let deliver):
            subscriber = HubSubscriber(format: nil, maxQueueBytes: hub.configuration.subscriberQueueBytes, coalescesWakeUps: false, isViewer: countsAsViewer, keepsStreamOpen: keepsStreamOpen) { subscriber in
                deliver(Self.batch(subscriber.drain()))
            }
        case .wake(let wake):
            subscriber = HubSubscriber(format: nil, maxQueueBytes: hub.configuration.subscriberQueueBytes, coalescesWakeUps: false, isViewer: countsAsViewer, keepsStreamOpen: keepsStreamOpen) { subscriber in
                wake { Self.batch(subscriber.drain()) }
            }
        }
        guard hub.subscribe(subscriber) else { return nil }
        return FrameSubscription(hub: hub, subscriber: subscriber)
    }

    /// Stops delivery. Frames already handed over stay with the consumer.
    public func cancel() {
        hub.unsubscribe(subscriber)
    }

    /// Skips and drops of this subscription's queue.
    public var statistics: HubSubscriber.Statistics { subscriber.statistics }

    private static func batch(_ batch: HubSubscriber.Batch) -> Batch {
        Batch(frames: batch.packets.map(\.frame), ended: batch.ended)
    }
}
