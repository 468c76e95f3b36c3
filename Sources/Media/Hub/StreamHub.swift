import NIOConcurrencyHelpers
import NIOCore

/// The meeting point of one stream: one publisher in, any number of subscribers out.
///
/// It keeps what a late joiner needs (metadata, audio and video configuration records and
/// the frames since the last keyframe, SRS's meta and GOP caches) and replays them, in
/// that order, to every new subscriber so its first video frame is a keyframe. Each frame
/// is serialised at most once per output format and the buffers are shared by all
/// subscribers of that format.
///
/// Concurrency: the state sits behind one lock rather than being confined to an event
/// loop, because a publisher that reconnects arrives on whichever loop accepted it while
/// viewers stay attached. The lock is uncontended on the hot path (one publisher thread)
/// and is held for one append per pipeline per frame, and one per viewer per wake-up
/// (`HubBurst`); wake-ups happen outside it.
public final class StreamHub: Sendable {
    /// The stream, or the rung of it, this hub carries.
    public let path: RenditionPath
    /// The stream this hub belongs to (its own for a source, the source's for a rung).
    public var stream: StreamPath { path.stream }
    public let configuration: HubConfiguration
    /// One slot per `OutputFormat` (by raw value): the hub's serializer for it, if any.
    private let serializers: [(any FrameSerializer)?]
    private let allocator = ByteBufferAllocator()
    private let state: NIOLockedValueBox<State>

    /// Identifies one publishing session (one connection's publish).
    public typealias PublisherID = UInt64

    struct Publisher {
        var id: PublisherID
        var lastActivity: NIODeadline
        var evict: @Sendable () -> Void
    }

    struct State {
        /// Adds `subscriber` to its list: O(1) per join.
        mutating func listSubscriber(_ subscriber: HubSubscriber) {
            if subscriber.coalescesWakeUps {
                coalescedSubscribers.append(subscriber)
            } else {
                immediateSubscribers.append(subscriber)
            }
        }

        /// Removes `subscriber` from its list: a scan, no allocation (the order of a list
        /// does not matter: it is the order of wake-ups within one flush).
        mutating func unlistSubscriber(_ subscriber: HubSubscriber) {
            func remove(from list: inout [HubSubscriber]) {
                guard let index = list.firstIndex(where: { $0 === subscriber }) else { return }
                list.swapAt(index, list.count - 1)
                list.removeLast()
            }
            if subscriber.coalescesWakeUps {
                remove(from: &coalescedSubscribers)
            } else {
                remove(from: &immediateSubscribers)
            }
        }

        var normalizer = TimestampNormalizer()
        var publisher: Publisher?
        var hadPublisher = false
        /// The timeline was re-based; the next media frame is marked `isDiscontinuity`.
        var discontinuityPending = false
        /// Who first published the stream; only the same owner may take it over or resume it.
        var owner: String?
        /// When the stream went to a publisher on another node (`answerPublisherElsewhere`),
        /// if none has attached here since: for `publisherIdleTakeover` after, a publisher
        /// here is refused as busy (the one elsewhere has just started), even one admitted
        /// before the handover.
        var handedOverAt: NIODeadline?
        var metadata: HubPacket?
        var audioSequenceHeader: HubPacket?
        var videoSequenceHeader: HubPacket?
        var gop: [HubPacket] = []
        var gopBytes = 0
        var hasVideo = false
        var subscribers: [ObjectIdentifier: HubSubscriber] = [:]
        /// The same subscribers as lists, kept as they join and leave, so a flush hands out a
        /// reference instead of building an array per burst.
        var coalescedSubscribers: [HubSubscriber] = []
        var immediateSubscribers: [HubSubscriber] = []
        var lastWake: NIODeadline = .distantPast
        /// The sequence number of the last frame taken in (see `HubSubscriber.joined`).
        var sequence: UInt64 = 0
        /// What the viewers get at their next wake-up, as one `HubBurst` (empty while
        /// nobody coalesces).
        var pendingBurst: [HubPacket] = []
        var pendingBurstFirstSequence: UInt64 = 0
        /// Payload bytes in `pendingBurst`: a burst as large as a viewer's queue bound is
        /// handed over at the next flush, whatever the interval.
        var pendingBurstBytes = 0
        /// Subscribers per `OutputFormat` (by raw value): formats nobody reads are not serialised.
        var demand: [Int]
        var ended = false
        var statistics = Statistics()
    }

    /// A hub for a stream's source.
    public convenience init(path: StreamPath, serializers: [any FrameSerializer], configuration: HubConfiguration = .init()) {
        self.init(path: .source(path), serializers: serializers, configuration: configuration)
    }

    /// `serializers`: one per output format the hub serves (a second of the same format
    /// replaces the first).
    public init(path: RenditionPath, serializers: [any FrameSerializer], configuration: HubConfiguration = .init()) {
        self.path = path
        var byFormat = [(any FrameSerializer)?](repeating: nil, count: OutputFormat.allCases.count)
        for serializer in serializers {
            byFormat[serializer.format.rawValue] = serializer
        }
        self.serializers = byFormat
        self.configuration = configuration
        var state = State(demand: Array(repeating: 0, count: OutputFormat.allCases.count))
        if let threshold = configuration.timestampJumpThreshold {
            state.normalizer = TimestampNormalizer(jumpThreshold: threshold.milliseconds)
        } else {
            state.normalizer = TimestampNormalizer(jumpThreshold: .max)
        }
        self.state = NIOLockedValueBox(state)
    }

    // MARK: Publisher side

    /// Makes `id` the stream's publisher, applying the one-publisher rule.
    /// `evict` is called (once, outside the lock) if a later publisher takes over.
    ///
    /// `owner` names the credentials the publisher came with (its stream key, or its client
    /// address where there are no keys; the transcoder and the bus name themselves). The
    /// first publisher's owner stays with the hub: taking over an idle publisher, or resuming
    /// within the grace period, needs the same owner, so a stranger cannot hijack a stream
    /// whose encoder stalled. nil skips the check.
    public func attachPublisher(id: PublisherID, owner: String? = nil, now: NIODeadline = .now(), evict: @escaping @Sendable () -> Void) -> AttachResult {
        let (result, evicted) = state.withLockedValue { state -> (AttachResult, (@Sendable () -> Void)?) in
            guard !state.ended else { return (.ended, nil) }
            var evicted: (@Sendable () -> Void)?
            var replaced = false
            if state.publisher == nil, let at = state.handedOverAt {
                let since = Duration.nanoseconds((now - at).nanoseconds)
                // Another node's publisher took the stream a moment ago: it is that one's,
                // busy as a publisher that has just attached (a reconnection admitted here
                // before the handover, and attaching after it, would publish beside it).
                if since < configuration.publisherIdleTakeover { return (.busy(idleFor: since), nil) }
            }
            if let current = state.publisher {
                let idle = now - current.lastActivity
                let idleDuration = Duration.nanoseconds(idle.nanoseconds)
                guard idleDuration >= configuration.publisherIdleTakeover else {
                    return (.busy(idleFor: idleDuration), nil)
                }
                if let owner, let first = state.owner, owner != first { return (.notOwner, nil) }
                evicted = current.evict
                replaced = true
            } else if let owner, let first = state.owner, owner != first {
                return (.notOwner, nil)
            }
            if state.owner == nil { state.owner = owner }
            state.handedOverAt = nil
            if state.hadPublisher { state.normalizer.beginNewEpoch() }
            state.hadPublisher = true
            state.publisher = Publisher(id: id, lastActivity: now, evict: evict)
            state.statistics.hasPublisher = true
            return (.attached(replacedIdle: replaced), evicted)
        }
        evicted?()
        return result
    }

    /// The one-publisher rule, asked for a publisher of this stream on another node (a
    /// cluster's ingests, over the bus): what `attachPublisher` would answer it here, with
    /// `isOwner` telling whether the stream's owner (its key, or its address) is the asker's.
    /// An idle publisher of the same owner is evicted (the asker takes over, as it would
    /// here), and so is a sending one of the same owner when `yielding` (this node drains:
    /// its publishers were asked to reconnect elsewhere, and open the new connection before
    /// they close this one); then the answer is `.attached`, as it is for the owner while no
    /// publisher is here (the stream moves). Once the stream has gone elsewhere so, and
    /// until a publisher attaches here again, the hub says nothing (nil), nor does an ended
    /// one: the node the stream went to answers for it.
    public func answerPublisherElsewhere(isOwner: (String) -> Bool, yielding: Bool = false, now: NIODeadline = .now()) -> AttachResult? {
        let (result, evicted) = state.withLockedValue { state -> (AttachResult?, (@Sendable () -> Void)?) in
            guard !state.ended, !(state.handedOverAt != nil && state.publisher == nil) else { return (nil, nil) }
            let owned = state.owner.map(isOwner) ?? true
            guard let current = state.publisher else {
                guard owned else { return (.notOwner, nil) }
                state.handedOverAt = now
                return (.attached(replacedIdle: false), nil)
            }
            let idleDuration = Duration.nanoseconds((now - current.lastActivity).nanoseconds)
            if !(yielding && owned) {
                guard idleDuration >= configuration.publisherIdleTakeover else { return (.busy(idleFor: idleDuration), nil) }
                guard owned else { return (.notOwner, nil) }
            }
            // Taken over from elsewhere: the publisher goes (its later frames are refused), as
            // a local takeover's does.
            state.publisher = nil
            state.statistics.hasPublisher = false
            state.handedOverAt = now
            return (.attached(replacedIdle: true), current.evict)
        }
        evicted?()
        return result
    }

    /// Whether the stream went to a publisher on another node and none has attached here
    /// since: a publisher evicted so was taken over, not evicted.
    public var isHandedOver: Bool { state.withLockedValue { $0.handedOverAt != nil } }

    /// Releases the stream if `id` is still its publisher. Viewers stay attached: a new
    /// publisher may continue the stream (see `StreamRegistry`'s grace period).
    @discardableResult
    public func detachPublisher(id: PublisherID) -> Bool {
        state.withLockedValue { state in
            guard state.publisher?.id == id else { return false }
            state.publisher = nil
            state.statistics.hasPublisher = false
            return true
        }
    }

    public var hasPublisher: Bool { state.withLockedValue { $0.publisher != nil } }

    /// Where a frame's timestamp comes from.
    public enum Clock: Sendable {
        /// The publisher's raw 32-bit millisecond clock, put on the hub's own timeline.
        case publisher
        /// Already on another hub's timeline (`timelineTimestamp(ofTrackAt:)`): a
        /// multitrack publisher's added track, kept in step with its stream. Only made
        /// monotonic.
        case followed
    }

    /// The time on this hub's timeline of a frame at `timestamp` (the publisher's raw clock)
    /// of another of its publisher's tracks, whose hub is apart (a multitrack publisher's
    /// added video or audio track): its hub takes the frame as `.followed`, so an HLS
    /// player joins the track to the stream's video by PTS, even when the track began after
    /// the publisher came back within its grace period, on a clock that started again.
    /// Nil when `id` is not (or no longer) the stream's publisher: a late frame of a
    /// publisher taken over must not place the next one's clock.
    /// Makes the stream's next frame continue a timeline whose newest frame is at
    /// `timestamp`: an ingest that takes a stream over from another node (an encoder that
    /// moved, within the other's grace period) continues the timeline the cluster's viewers
    /// are on. Called before the first frame; the first frame after is a discontinuity.
    public func continueTimeline(after timestamp: Int64) {
        state.withLockedValue { $0.normalizer.continueAfter(timestamp) }
    }

    public func timelineTimestamp(ofTrackAt timestamp: Int64, publisher id: PublisherID) -> Int64? {
        state.withLockedValue { state in
            guard !state.ended, state.publisher?.id == id else { return nil }
            let rebases = state.normalizer.rebaseCount
            let output = state.normalizer.follow(UInt32(truncatingIfNeeded: timestamp))
            if state.normalizer.rebaseCount != rebases { state.discontinuityPending = true }
            return output
        }
    }

    /// Accepts a frame from publisher `id`. The frame's timestamp is the publisher's raw
    /// 32-bit clock (or, `.followed`, another hub's time); the hub maps it onto the
    /// stream's monotonic timeline.
    /// Returns false when `id` is not (or no longer) the publisher: the caller should stop.
    /// Call `flush()` after a burst of frames (e.g. at the end of a socket read).
    @discardableResult
    public func publish(_ frame: MediaFrame, publisher id: PublisherID, clock: Clock = .publisher, now: NIODeadline = .now()) -> Bool {
        state.withLockedValue { state in
            guard !state.ended, state.publisher?.id == id else { return false }
            state.publisher?.lastActivity = now
            var frame = frame
            let rebases = state.normalizer.rebaseCount
            switch clock {
            case .publisher:
                frame.timestamp = state.normalizer.normalize(UInt32(truncatingIfNeeded: frame.timestamp), kind: frame.kind)
            case .followed:
                frame.timestamp = state.normalizer.place(frame.timestamp, kind: frame.kind)
            }
            // A re-based timeline marks the next media frame (a reconnecting publisher's
            // identical configuration records are dropped below, so not those).
            if state.normalizer.rebaseCount != rebases { state.discontinuityPending = true }
            if state.discontinuityPending, !frame.isSequenceHeader, frame.kind != .script {
                frame.isDiscontinuity = true
                state.discontinuityPending = false
            }
            let bytes = frame.payload.readableBytes
            state.statistics.framesIn &+= 1
            state.statistics.bytesIn &+= bytes
            if !frame.isSequenceHeader {
                switch frame.kind {
                case .video:
                    state.statistics.videoFramesIn &+= 1
                    state.statistics.videoBytesIn &+= bytes
                case .audio:
                    state.statistics.audioFramesIn &+= 1
                    state.statistics.audioBytesIn &+= bytes
                case .script:
                    break
                }
            }
            state.statistics.timestampRebases = state.normalizer.rebaseCount
            Self.ingest(frame, into: &state, serializers: serializers, allocator: allocator, configuration: configuration)
            return true
        }
    }

    private static func ingest(_ frame: MediaFrame, into state: inout State, serializers: [(any FrameSerializer)?], allocator: ByteBufferAllocator, configuration: HubConfiguration) {
        if frame.kind == .video { state.hasVideo = true }
        let isConfiguration = frame.isSequenceHeader || frame.kind == .script
        let isSyncPoint = isConfiguration || (frame.kind == .video && frame.isKeyframe) || (frame.kind == .audio && !state.hasVideo)
        var packet = HubPacket(frame: frame, isSyncPoint: isSyncPoint, wire: Array(repeating: nil, count: serializers.count))
        for (index, count) in state.demand.enumerated() where count > 0 {
            packet.wire[index] = serializers[index]?.serialize(frame, allocator: allocator)
        }

        if isConfiguration {
            // A reconnecting encoder resends identical records; forwarding them would make
            // players reset their decoders for nothing.
            switch frame.kind {
            case .script:
                if state.metadata?.frame.payload == frame.payload { return }
                state.metadata = packet
            case .audio:
                if state.audioSequenceHeader?.frame.payload == frame.payload { return }
                state.audioSequenceHeader = packet
            case .video:
                if state.videoSequenceHeader?.frame.payload == frame.payload { return }
                // New parameters (e.g. a resolution change): cached frames no longer decode.
                state.videoSequenceHeader = packet
                state.gop.removeAll()
                state.gopBytes = 0
            }
        } else {
            cache(packet, in: &state, configuration: configuration)
        }
        state.sequence &+= 1
        // Pipelines take each frame as it comes; viewers take the burst at their wake-up.
        for subscriber in state.immediateSubscribers {
            subscriber.enqueue(packet)
        }
        if !state.coalescedSubscribers.isEmpty {
            if state.pendingBurst.isEmpty { state.pendingBurstFirstSequence = state.sequence }
            state.pendingBurst.append(packet)
            state.pendingBurstBytes += packet.cost(format: nil)
        }
    }

    /// Hands the pending burst to every viewer; returns those to wake (outside the lock).
    private func deliverPendingBurst(_ state: inout State) -> [HubSubscriber] {
        guard !state.pendingBurst.isEmpty else { return [] }
        let burst = HubBurst(packets: state.pendingBurst, firstSequence: state.pendingBurstFirstSequence, demand: state.demand, allocator: allocator)
        state.pendingBurst = []
        state.pendingBurstBytes = 0
        var wakes: [HubSubscriber] = []
        wakes.reserveCapacity(state.coalescedSubscribers.count)
        for subscriber in state.coalescedSubscribers where subscriber.deliver(burst) {
            wakes.append(subscriber)
        }
        return wakes
    }

    private static func cache(_ packet: HubPacket, in state: inout State, configuration: HubConfiguration) {
        if packet.frame.kind == .video && packet.frame.isKeyframe {
            state.gop.removeAll(keepingCapacity: true)
            state.gopBytes = 0
        } else if state.gop.isEmpty {
            return  // nothing cached until the first keyframe
        }
        state.gop.append(packet)
        state.gopBytes += packet.frame.payload.readableBytes
        if state.gop.count > configuration.gopCacheMaxFrames || state.gopBytes > configuration.gopCacheMaxBytes {
            state.gop.removeAll()
            state.gopBytes = 0
        }
        state.statistics.gopFrames = state.gop.count
    }

    /// Wakes subscribers that have new data: call it after a burst of frames. Wake-ups
    /// are coalesced to at most one per `HubConfiguration.wakeInterval` (a burst inside
    /// the interval is picked up by the next one); `force` wakes at once (a publisher
    /// leaving must not strand its last frames). Viewers get the frames taken in since
    /// their last wake-up here, as one `HubBurst`: until then they have none of them.
    ///
    /// - Returns: nil when subscribers were woken; otherwise how long until the next
    ///   wake-up is due. A publisher that may go quiet should then call `flush(force:)`
    ///   after that delay, so deferred frames never wait for the next burst.
    @discardableResult
    public func flush(force: Bool = false, now: NIODeadline = .now()) -> TimeAmount? {
        let configured = TimeAmount.nanoseconds(Int64(configuration.wakeInterval.components.seconds) * 1_000_000_000
            + configuration.wakeInterval.components.attoseconds / 1_000_000_000)
        let interval = configuration.wakeLoad?.interval(configured) ?? configured
        let (immediate, woken, deferral) = state.withLockedValue { state -> ([HubSubscriber], [HubSubscriber], TimeAmount?) in
            let elapsed = now - state.lastWake
            let full = state.pendingBurstBytes >= configuration.subscriberQueueBytes
            guard force || full || elapsed >= interval else {
                return (state.immediateSubscribers, [], interval - elapsed)
            }
            state.lastWake = now
            return (state.immediateSubscribers, deliverPendingBurst(&state), nil)
        }
        for subscriber in immediate { subscriber.notify() }
        Self.wake(woken)
        return deferral
    }

    /// Wakes viewers after a burst: one task per event loop for those that have one (a
    /// node's viewers share a few loops), each directly otherwise.
    static func wake(_ subscribers: [HubSubscriber]) {
        var groups: [(loop: any EventLoop, subscribers: [HubSubscriber])] = []
        for subscriber in subscribers {
            guard let loop = subscriber.eventLoop else {
                subscriber.wakeUp()
                continue
            }
            if let index = groups.firstIndex(where: { $0.loop === loop }) {
                groups[index].subscribers.append(subscriber)
            } else {
                groups.append((loop, [subscriber]))
            }
        }
        for group in groups {
            let subscribers = group.subscribers
            group.loop.execute {
                for subscriber in subscribers { subscriber.wakeOnItsLoop() }
            }
        }
    }

    // MARK: Subscriber side

    /// Adds a subscriber and queues, in order, the metadata, the audio and video
    /// configuration records and the cached GOP, then wakes it.
    /// Returns false if the hub has ended.
    @discardableResult
    public func subscribe(_ subscriber: HubSubscriber) -> Bool {
        let added = state.withLockedValue { state -> Bool in
            guard !state.ended else { return false }
            guard state.subscribers.updateValue(subscriber, forKey: ObjectIdentifier(subscriber)) == nil else { return true }
            state.listSubscriber(subscriber)
            subscriber.joined(after: state.sequence, losses: losses)
            state.statistics.subscribers = state.subscribers.count
            if subscriber.keepsStreamOpen { state.statistics.holders += 1 }
            if subscriber.isViewer {
                state.statistics.viewers += 1
                configuration.wakeLoad?.add(1)
            }
            if let format = subscriber.format, let serializer = serializers[format.rawValue] {
                let slot = format.rawValue
                state.demand[slot] += 1
                // Cached packets may predate this format's first subscriber: fill them in place.
                fill(slot, in: &state.metadata)
                fill(slot, in: &state.audioSequenceHeader)
                fill(slot, in: &state.videoSequenceHeader)
                for index in state.gop.indices where state.gop[index].wire[slot] == nil {
                    state.gop[index].wire[slot] = serializer.serialize(state.gop[index].frame, allocator: allocator)
                }
            }
            for packet in [state.metadata, state.audioSequenceHeader, state.videoSequenceHeader] {
                if let packet { subscriber.enqueue(packet, replay: true) }
            }
            for packet in state.gop { subscriber.enqueue(packet, replay: true) }
            return true
        }
        if added { subscriber.notify() }
        return added
    }

    private func fill(_ slot: Int, in packet: inout HubPacket?) {
        guard var value = packet, value.wire[slot] == nil, let serializer = serializers[slot] else { return }
        value.wire[slot] = serializer.serialize(value.frame, allocator: allocator)
        packet = value
    }

    public func unsubscribe(_ subscriber: HubSubscriber) {
        state.withLockedValue { state in
            guard state.subscribers.removeValue(forKey: ObjectIdentifier(subscriber)) != nil else { return }
            state.unlistSubscriber(subscriber)
            if state.coalescedSubscribers.isEmpty {
                state.pendingBurst = []
                state.pendingBurstBytes = 0
            }
            state.statistics.subscribers = state.subscribers.count
            if subscriber.keepsStreamOpen { state.statistics.holders -= 1 }
            if subscriber.isViewer {
                state.statistics.viewers -= 1
                configuration.wakeLoad?.add(-1)
            }
            if let format = subscriber.format, serializers[format.rawValue] != nil { state.demand[format.rawValue] -= 1 }
        }
    }

    // MARK: Lifecycle

    /// Ends the stream: every subscriber is told (and then closes), caches are freed.
    public func end() {
        let (subscribers, publisher) = state.withLockedValue { state -> ([HubSubscriber], Publisher?) in
            guard !state.ended else { return ([], nil) }
            // The viewers' last burst goes before the end (they are all woken below).
            _ = deliverPendingBurst(&state)
            state.ended = true
            let subscribers = Array(state.subscribers.values)
            let publisher = state.publisher
            state.subscribers.removeAll()
            state.coalescedSubscribers = []
            state.immediateSubscribers = []
            state.publisher = nil
            state.gop.removeAll()
            state.metadata = nil
            state.audioSequenceHeader = nil
            state.videoSequenceHeader = nil
            state.statistics.subscribers = 0
            configuration.wakeLoad?.add(-state.statistics.viewers)
            state.statistics.viewers = 0
            state.statistics.holders = 0
            state.statistics.hasPublisher = false
            return (subscribers, publisher)
        }
        for subscriber in subscribers { subscriber.end() }
        publisher?.evict()
    }

    /// Disconnects the current publisher (an operator's kick): its connection is closed
    /// through its `evict` closure, and viewers wait for a publisher as after any
    /// disconnect. Returns false when nobody publishes.
    @discardableResult
    public func evictPublisher() -> Bool {
        evictPublisher(ifOwnedBy: nil)
    }

    public var isEnded: Bool { state.withLockedValue { $0.ended } }

    /// The credentials of the stream's first publisher (see ``attachPublisher(id:owner:now:evict:)``).
    public var owner: String? { state.withLockedValue { $0.owner } }

    /// Disconnects the publisher if it is `owner`'s, and forgets the owner, so that the next
    /// publisher with valid credentials may resume the stream within its grace period: the
    /// owner's stream key was revoked. Returns true when a publisher was disconnected.
    public func evictPublisher(ownedBy owner: String) -> Bool {
        evictPublisher(ifOwnedBy: owner)
    }

    /// Detaches the publisher (only if the stream is `owner`'s, forgetting the owner, when
    /// one is given) and calls its `evict` outside the lock.
    private func evictPublisher(ifOwnedBy owner: String?) -> Bool {
        let publisher = state.withLockedValue { state -> Publisher? in
            if let owner {
                guard state.owner == owner else { return nil }
                state.owner = nil
            }
            defer { state.publisher = nil; state.statistics.hasPublisher = false }
            return state.publisher
        }
        publisher?.evict()
        return publisher != nil
    }

    public var statistics: Statistics {
        var statistics = state.withLockedValue { $0.statistics }
        (statistics.viewerSkips, statistics.viewerDroppedFrames) = losses.totals
        return statistics
    }
    /// Every subscriber's overflow skips, counted where they happen.
    private let losses = HubLossCounters()

    /// What a new subscriber would be sent now, in order: the metadata, the audio and video
    /// configuration records and the cached GOP (empty once the hub has ended). This is
    /// what a relay asks the origin for over the bus before it joins the live frames.
    public func startFrames() -> [MediaFrame] {
        state.withLockedValue { state in
            guard !state.ended else { return [] }
            return [state.metadata, state.audioSequenceHeader, state.videoSequenceHeader].compactMap { $0?.frame } + state.gop.map(\.frame)
        }
    }

    /// The cached configuration records and metadata (for status pages and the cluster).
    public var configurationRecords: (metadata: MediaFrame?, audio: MediaFrame?, video: MediaFrame?) {
        state.withLockedValue { ($0.metadata?.frame, $0.audioSequenceHeader?.frame, $0.videoSequenceHeader?.frame) }
    }
}
