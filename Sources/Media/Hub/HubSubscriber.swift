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
///
/// A viewer (`coalescesWakeUps`) gets what the hub took in since its last wake-up as one
/// shared `HubBurst` (`deliver`), one queue entry for all its frames; a pipeline gets each
/// frame as it is published (`enqueue`). Both go through the same bound and skip policy.
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
    /// Keeps a stream fetched on demand (a relay's bus mirror, an edge's pull) open while it
    /// is subscribed (`StreamHub.Statistics.holders`): every viewer, and the pipelines that
    /// stand for consumers elsewhere (a transcoder's feed, a forward). Not the HLS segmenter,
    /// which every mirror has and whose players keep a mirror open by asking for it, nor the
    /// bus publication.
    public let keepsStreamOpen: Bool
    /// The event loop the consumer runs on, if it has one: `wake` is then called on it, and
    /// the hub wakes all of a loop's viewers with one task (`StreamHub.wake(_:)`) instead of
    /// one task each, which was a closure, a lock and a queue entry per viewer per burst.
    public let eventLoop: (any EventLoop)?
    private let wake: @Sendable (HubSubscriber) -> Void
    private let state: NIOLockedValueBox<State>

    /// One queue entry: a frame, or a burst of them from its `from` index on.
    public enum Item: Sendable {
        case packet(HubPacket)
        case burst(HubBurst, from: Int)

        /// The frames of this entry, in order.
        public var packets: ArraySlice<HubPacket> {
            switch self {
            case .packet(let packet): [packet][...]
            case .burst(let burst, let from): burst.packets[from...]
            }
        }

        var count: Int {
            switch self {
            case .packet: 1
            case .burst(let burst, let from): burst.packets.count - from
            }
        }
    }

    public struct Batch: Sendable {
        public var items: [Item]
        /// The stream has ended: after these packets there will be no more.
        public var ended: Bool

        /// Every frame of the batch, in order.
        public var packets: [HubPacket] {
            if items.count == 1, case .burst(let burst, 0) = items[0] { return burst.packets }
            return items.flatMap(\.packets)
        }
    }

    public struct Statistics: Sendable, Equatable {
        /// Times the queue overflowed and the subscriber skipped to the next keyframe.
        public var skips: Int = 0
        /// Media frames dropped while skipping.
        public var droppedFrames: Int = 0
        public var deliveredFrames: Int = 0
    }

    struct State {
        var queue: [Item] = []
        var queuedBytes = 0
        var skippingToSyncPoint = false
        var wakePending = false
        var ended = false
        /// The hub's sequence number of the last frame this subscriber had before it joined
        /// (in its replay, or published before it): bursts deliver only what came after.
        var joinedAfter: UInt64 = 0
        var statistics = Statistics()
        /// The hub's totals, which a skip also counts in (set when it joins).
        var hubLosses: HubLossCounters?
    }

    /// - Parameters:
    ///   - format: the format this subscriber writes, or nil for raw frames.
    ///   - maxQueueBytes: the queue bound; see `HubConfiguration.subscriberQueueBytes`.
    ///   - coalescesWakeUps: whether wake-ups are limited to one per wake interval.
    ///   - isViewer: whether the hub counts it as a viewer (a player, whatever it reads).
    ///   - keepsStreamOpen: whether a pipeline keeps an on-demand stream open (a viewer always does).
    ///   - eventLoop: the consumer's event loop, on which `wake` is then called.
    ///   - wake: called with this subscriber when data is waiting: on `eventLoop` when there
    ///     is one (it may drain at once), otherwise from the publisher's thread (it should
    ///     only schedule a `drain()` on the consumer's own thread).
    public init(
        format: OutputFormat?, maxQueueBytes: Int, coalescesWakeUps: Bool = true, isViewer: Bool = true,
        keepsStreamOpen: Bool = false,
        eventLoop: (any EventLoop)? = nil, wake: @escaping @Sendable (HubSubscriber) -> Void
    ) {
        self.format = format
        self.maxQueueBytes = maxQueueBytes
        self.coalescesWakeUps = coalescesWakeUps
        self.isViewer = isViewer
        self.keepsStreamOpen = isViewer || keepsStreamOpen
        self.eventLoop = eventLoop
        self.wake = wake
        self.state = NIOLockedValueBox(State())
    }

    /// Takes everything queued. After this, the next enqueue wakes the consumer again.
    public func drain() -> Batch {
        state.withLockedValue { state in
            // Handed over whole, not emptied in place: keeping the capacity would copy the
            // array (the batch still holds it) and keep a viewer's largest queue, its GOP
            // replay, allocated for life. The next entry allocates a small array.
            let items = state.queue
            state.queue = []
            state.queuedBytes = 0
            state.wakePending = false
            state.statistics.deliveredFrames &+= items.reduce(0) { $0 + $1.count }
            return Batch(items: items, ended: state.ended)
        }
    }

    public var statistics: Statistics { state.withLockedValue { $0.statistics } }

    public var queuedBytes: Int { state.withLockedValue { $0.queuedBytes } }

    /// Appends a packet, applying the overflow policy. Called by the hub under its lock.
    /// `replay` packets (headers and GOP for a new subscriber) bypass the bound: a new
    /// viewer must get the whole GOP to start on a keyframe.
    func enqueue(_ packet: HubPacket, replay: Bool = false) {
        state.withLockedValue { state in
            enqueue(packet, replay: replay, into: &state)
        }
    }

    /// Records where this subscriber joined the hub's sequence (under the hub's lock, before
    /// its replay is queued).
    func joined(after sequence: UInt64, losses: HubLossCounters? = nil) {
        state.withLockedValue { state in
            state.joinedAfter = sequence
            state.hubLosses = losses
        }
    }

    /// Hands over a viewer's share of `burst`: the whole burst as one entry when it fits the
    /// bound and no skip is under way (the common case), otherwise frame by frame under the
    /// same policy as `enqueue`. Called by the hub under its lock. Returns whether the
    /// consumer must be woken (outside the hub's lock: `wakeUp()`).
    func deliver(_ burst: HubBurst) -> Bool {
        state.withLockedValue { state in
            guard !state.ended else { return false }
            var from = 0
            if burst.firstSequence <= state.joinedAfter {
                // Joined during the burst: what came before the join was in its replay.
                let skip = state.joinedAfter - burst.firstSequence + 1
                guard skip < UInt64(burst.packets.count) else { return false }
                from = Int(skip)
            }
            let cost = burst.cost(format: format)
            if from == 0, !state.skippingToSyncPoint, state.queuedBytes + cost <= maxQueueBytes {
                state.queue.append(.burst(burst, from: 0))
                state.queuedBytes += cost
            } else {
                for packet in burst.packets[from...] {
                    enqueue(packet, replay: false, into: &state)
                }
            }
            guard !state.wakePending, !state.queue.isEmpty else { return false }
            state.wakePending = true
            return true
        }
    }

    /// Wakes the consumer after a `deliver` that said so: on its event loop, if it has one.
    func wakeUp() {
        guard let eventLoop else { return wake(self) }
        eventLoop.execute { self.wake(self) }
    }

    /// Wakes the consumer from a task already on its `eventLoop` (`StreamHub.wake(_:)`).
    func wakeOnItsLoop() {
        wake(self)
    }

    private func enqueue(_ packet: HubPacket, replay: Bool, into state: inout State) {
        let cost = packet.cost(format: format)
        guard !state.ended else { return }
        let isConfiguration = Self.isConfiguration(packet)
        if isConfiguration || replay {
            if isConfiguration, !replay, state.queuedBytes + cost > maxQueueBytes {
                // A publisher that sends configuration records faster than this viewer
                // reads: they count against the bound too. Drop the queued media and the
                // older records of this kind (only the newest matters), resume at a sync point.
                let mediaBefore = dropQueued(from: &state) { !Self.isConfiguration($0) || Self.sameConfiguration($0, packet) }
                if mediaBefore > 0 { state.skippingToSyncPoint = true }
            }
            state.queue.append(.packet(packet))
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
            _ = dropQueued(from: &state) { !Self.isConfiguration($0) }
            guard packet.isSyncPoint else {
                state.skippingToSyncPoint = true
                state.statistics.droppedFrames &+= 1
                return
            }
        }
        state.queue.append(.packet(packet))
        state.queuedBytes += cost
    }

    /// Drops the queued packets `dropping` selects (counted as a skip and as dropped frames)
    /// and keeps the rest, in order, as single entries. Returns how many media frames (not
    /// configuration records) were queued before.
    private func dropQueued(from state: inout State, dropping: (HubPacket) -> Bool) -> Int {
        var kept: [Item] = []
        var dropped = 0
        var media = 0
        var bytes = 0
        for item in state.queue {
            for packet in item.packets {
                if !Self.isConfiguration(packet) { media += 1 }
                if dropping(packet) {
                    dropped += 1
                } else {
                    kept.append(.packet(packet))
                    bytes += packet.cost(format: format)
                }
            }
        }
        state.queue = kept
        state.queuedBytes = bytes
        state.statistics.skips &+= 1
        state.statistics.droppedFrames &+= dropped
        state.hubLosses?.record(droppedFrames: dropped)
        return media
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
        if shouldWake { wakeUp() }
    }

    /// Marks the end of the stream and wakes the consumer so it can close.
    func end() {
        // Always wake: an ended subscriber must learn of it even if a wake is pending.
        state.withLockedValue { state in
            state.ended = true
            state.wakePending = true
        }
        wakeUp()
    }
}
