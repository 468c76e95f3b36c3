import NIOConcurrencyHelpers
import NIOCore

/// One consumer of a stream hub: a viewer connection, or (wrapped in a `FrameSubscription`)
/// a segmenter, a bus publication, a transcoder feed.
///
/// The hub appends packets from the publisher's thread; the consumer drains them from its
/// own thread. The queue is bounded in bytes: when a packet would overflow it, everything
/// queued except configuration records is dropped and the subscriber skips forward to the
/// next sync point (keyframe), so a slow viewer costs itself frames and never slows the
/// publisher or other viewers. Packets are references to shared buffers, so the bound
/// limits how much old media one slow viewer can keep alive, not copies.
///
/// Wake-ups are edge-triggered and coalesced: the hub calls `wake` once when new data is
/// waiting and the consumer has not been woken since its last `drain()`. A consumer
/// drains everything at once and writes it with one flush.
public final class HubSubscriber: Sendable {
    /// Which serialisation this subscriber reads (`nil`: it reads `HubPacket.frame`).
    public let format: OutputFormat?
    /// The byte bound of the queue.
    public let maxQueueBytes: Int
    /// Viewer connections coalesce wake-ups (`HubConfiguration.wakeInterval`); internal
    /// consumers whose latency adds to everyone's (HLS segmenter, transcoder) do not.
    public let coalescesWakeUps: Bool
    /// Counted in `StreamHub.Statistics.viewers`: false for pipelines (`FrameSubscription`).
    public let isViewer: Bool
    private let wake: @Sendable (HubSubscriber) -> Void
    private let state: NIOLockedValueBox<State>

    public struct Batch: Sendable {
        public var packets: [HubPacket]
        /// The stream has ended: after these packets there will be no more.
        public var ended: Bool
    }

    public struct Statistics: Sendable, Equatable {
        /// Times the queue overflowed and the subscriber skipped to the next keyframe.
        public var skips: Int = 0
        /// Media frames dropped while skipping.
        public var droppedFrames: Int = 0
        public var deliveredFrames: Int = 0
    }

    struct State {
        var queue: [HubPacket] = []
        var queuedBytes = 0
        var skippingToSyncPoint = false
        var wakePending = false
        var ended = false
        var statistics = Statistics()
    }

    /// - Parameters:
    ///   - format: the format this subscriber writes, or nil for raw frames.
    ///   - maxQueueBytes: the queue bound; see `HubConfiguration.subscriberQueueBytes`.
    ///   - coalescesWakeUps: whether wake-ups are limited to one per wake interval.
    ///   - isViewer: whether the hub counts it as a viewer (a player, whatever it reads).
    ///   - wake: called (from the publisher's thread) with this subscriber when data is
    ///     waiting; it should only schedule a `drain()` on the consumer's own thread.
    public init(format: OutputFormat?, maxQueueBytes: Int, coalescesWakeUps: Bool = true, isViewer: Bool = true, wake: @escaping @Sendable (HubSubscriber) -> Void) {
        self.format = format
        self.maxQueueBytes = maxQueueBytes
        self.coalescesWakeUps = coalescesWakeUps
        self.isViewer = isViewer
        self.wake = wake
        self.state = NIOLockedValueBox(State())
    }

    /// Takes everything queued. After this, the next enqueue wakes the consumer again.
    public func drain() -> Batch {
        state.withLockedValue { state in
            let packets = state.queue
            state.queue.removeAll(keepingCapacity: packets.count <= 64)
            state.queuedBytes = 0
            state.wakePending = false
            state.statistics.deliveredFrames &+= packets.count
            return Batch(packets: packets, ended: state.ended)
        }
    }

    public var statistics: Statistics { state.withLockedValue { $0.statistics } }

    public var queuedBytes: Int { state.withLockedValue { $0.queuedBytes } }

    /// Appends a packet, applying the overflow policy. Called by the hub under its lock.
    /// `replay` packets (headers and GOP for a new subscriber) bypass the bound: a new
    /// viewer must get the whole GOP to start on a keyframe.
    func enqueue(_ packet: HubPacket, replay: Bool = false) {
        let cost = packet.cost(format: format)
        state.withLockedValue { state in
            guard !state.ended else { return }
            let isConfiguration = Self.isConfiguration(packet)
            if isConfiguration || replay {
                if isConfiguration, !replay, state.queuedBytes + cost > maxQueueBytes {
                    // A publisher that sends configuration records faster than this viewer
                    // reads: they count against the bound too. Drop the queued media and the
                    // older records of this kind (only the newest matters), resume at a sync point.
                    let before = state.queue.count
                    let mediaBefore = state.queue.count { !Self.isConfiguration($0) }
                    state.queue.removeAll { !Self.isConfiguration($0) || Self.sameConfiguration($0, packet) }
                    state.queuedBytes = state.queue.reduce(0) { $0 + $1.cost(format: format) }
                    state.statistics.skips &+= 1
                    state.statistics.droppedFrames &+= before - state.queue.count
                    if mediaBefore > 0 { state.skippingToSyncPoint = true }
                }
                state.queue.append(packet)
                state.queuedBytes += cost
                return
            }
            if state.skippingToSyncPoint {
                guard packet.isSyncPoint else {
                    state.statistics.droppedFrames &+= 1
                    return
                }
                state.skippingToSyncPoint = false
            } else if state.queuedBytes + cost > maxQueueBytes {
                // Overflow: drop queued media, keep configuration records, resume at a sync point.
                let before = state.queue.count
                state.queue.removeAll { !Self.isConfiguration($0) }
                state.queuedBytes = state.queue.reduce(0) { $0 + $1.cost(format: format) }
                state.statistics.skips &+= 1
                state.statistics.droppedFrames &+= before - state.queue.count
                guard packet.isSyncPoint else {
                    state.skippingToSyncPoint = true
                    state.statistics.droppedFrames &+= 1
                    return
                }
            }
            state.queue.append(packet)
            state.queuedBytes += cost
        }
    }

    private static func isConfiguration(_ packet: HubPacket) -> Bool {
        packet.frame.isSequenceHeader || packet.frame.kind == .script
    }

    /// Two configuration records that replace each other: metadata, or sequence headers of one track.
    private static func sameConfiguration(_ a: HubPacket, _ b: HubPacket) -> Bool {
        a.frame.kind == b.frame.kind
    }

    /// Wakes the consumer if data is waiting and it has not been woken since its last drain.
    func notify() {
        let shouldWake = state.withLockedValue { state -> Bool in
            guard !state.wakePending, !state.queue.isEmpty || state.ended else { return false }
            state.wakePending = true
            return true
        }
        if shouldWake { wake(self) }
    }

    /// Marks the end of the stream and wakes the consumer so it can close.
    func end() {
        // Always wake: an ended subscriber must learn of it even if a wake is pending.
        state.withLockedValue { state in
            state.ended = true
            state.wakePending = true
        }
        wake(self)
    }
}
