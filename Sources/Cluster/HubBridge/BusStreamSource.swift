import Logging
import Media
import Metrics
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A relay's streams, fed from the cluster bus on demand.
///
/// When a viewer asks for a rendition the relay has no hub for, `open` looks for a node
/// that publishes it: a source on `media.<app>.<name>.src`, a rung on
/// `media.<app>.<name>.<rung>` (which old-style `name_<rung>` names a viewer may use is
/// the registry's business: `RequestedRendition`). It subscribes to the media subject
/// first, then fetches the publisher's metadata, configuration records and GOP with one
/// request (`MediaBusGOP`), publishes those into a new local hub, and then the live frames
/// that arrived meanwhile (those not already in the GOP). The first viewer starts at once.
///
/// An encoder that moves to another ingest (its backup URL, or after its ingest died) is a
/// new publisher session on the same subject, with a clock that starts again
/// (`MediaBusFrameHeader.hasOwnClock`): its frames are re-based to continue the mirror's
/// timeline after the time that passed (so that a stream's renditions, each mirrored on
/// its own, stay aligned), the first marked as a discontinuity, and the end the ingest it left announces
/// later (when its grace period runs out) is ignored, being of an epoch the mirror no longer
/// follows. Viewers stay on.
///
/// A relay holds a subscription only while the stream is used: once a mirrored hub has had
/// no holders (`StreamHub.Statistics.holders`: viewers, and pipelines that stand for
/// consumers elsewhere, such as a transcoder's feed) and no lookups for `idleGrace`, the
/// subscription is cancelled and the hub ended.
public final class BusStreamSource: RemoteStreamSource {
    public struct Configuration: Sendable {
        /// How long a request for a publisher's GOP may take.
        public var gopRequestTimeout: Duration = .seconds(2)
        /// How long an unwatched mirror is kept.
        public var idleGrace: Duration = .seconds(5)
        /// A mirror that received nothing for this long has lost its publisher (which
        /// normally says so on its `end.` subject) and ends, like a local stream after
        /// its publisher's grace period.
        public var staleAfter: Duration = .seconds(10)
        /// Lookups on the bus at once. Each holds a subscription (a thread in cnats) for up
        /// to `gopRequestTimeout`, and any viewer can start one by asking for a name nobody
        /// publishes: over the limit, a play is answered "not found" at once.
        public var maxConcurrentOpens = 64

        public init() {}
    }

    private final class Mirror: Sendable {
        let hub: StreamHub
        let subscription: MediaBusSubscription
        let feed: NIOLockedValueBox<Feed>
        let ended = NIOLockedValueBox(false)
        let endSubscription = NIOLockedValueBox<BusSubscription?>(nil)
        let lastUse: NIOLockedValueBox<NIODeadline>

        init(hub: StreamHub, subscription: MediaBusSubscription, feed: NIOLockedValueBox<Feed>) {
            self.hub = hub
            self.subscription = subscription
            self.feed = feed
            self.lastUse = NIOLockedValueBox(.now())
        }
    }

    /// What the media handler does with live frames: hold them while the GOP is fetched,
    /// then publish those newer than the GOP's last frame of their kind.
    private struct Feed: Sendable {
        var hub: StreamHub?
        var publisher: StreamHub.PublisherID = 0
        var held: [MediaFrame] = []
        var lastTimestamp: [MediaKind: Int64] = [:]
        /// Set when a live video keyframe came too old to pass: the video frames after it
        /// refer to it, so they wait for a keyframe that passes.
        var awaitingKeyframe = false
        /// Set while the GOP is fetched again after a gap on the bus: live frames are held.
        var refilling = false
        var flushScheduled = false
        var lastFrameAt = NIODeadline.now()
        /// When the last media frame came (not a configuration record nor metadata, which a
        /// new publisher session sends first): the re-basing counts the silence from it.
        var lastMediaAt = NIODeadline.now()
        /// Added to the live frames' timestamps: the re-basing of a publisher session with a
        /// new clock (0 for the first).
        var offset: Int64 = 0
    }

    private let bus: any Bus
    private let configuration: Configuration
    private let logger: Logger
    private let mirrors = NIOLockedValueBox<[RenditionPath: Mirror]>([:])
    /// Lookups in flight, and when a refusal was last logged (at most one line a second).
    private let opening = NIOLockedValueBox<(count: Int, lastRefusalLog: NIODeadline)>((0, .distantPast))
    private let loop: any EventLoop
    /// Called with each new mirrored hub (the relay attaches HLS).
    private let onOpen: @Sendable (StreamHub) async -> Void

    public init(
        bus: any Bus,
        configuration: Configuration = .init(),
        logger: Logger,
        onOpen: @escaping @Sendable (StreamHub) async -> Void = { _ in }
    ) {
        self.bus = bus
        self.configuration = configuration
        self.logger = logger
        self.loop = MultiThreadedEventLoopGroup.singleton.next()
        self.onOpen = onOpen
    }

    /// Mirrors currently held (for tests and metrics).
    public var openStreams: [RenditionPath] { mirrors.withLockedValue { Array($0.keys) } }

    public func touch(_ path: RenditionPath) {
        let mirror = mirrors.withLockedValue { $0[path] }
        mirror?.lastUse.withLockedValue { $0 = .now() }
    }

    public func open(_ path: RenditionPath, registry: StreamRegistry) async -> StreamHub? {
        let limit = configuration.maxConcurrentOpens
        let (admitted, logRefusal) = opening.withLockedValue { opening -> (Bool, Bool) in
            guard opening.count < limit else {
                let now = NIODeadline.now()
                let log = now - opening.lastRefusalLog >= .seconds(1)
                if log { opening.lastRefusalLog = now }
                return (false, log)
            }
            opening.count += 1
            return (true, false)
        }
        guard admitted else {
            HubBridgeMetrics.refusedOpens.increment()
            if logRefusal {
                logger.warning("too many bus lookups at once (\(limit)): answering not found", metadata: ["stream": "\(path)"])
            }
            return nil
        }
        defer { opening.withLockedValue { $0.count -= 1 } }
        return await mirror(path, registry: registry)
    }

    private func mirror(_ path: RenditionPath, registry: StreamRegistry) async -> StreamHub? {
        guard let subject = try? MediaBusSubject(path: path.stream, rendition: path.renditionName) else { return nil }
        let feed = NIOLockedValueBox(Feed())
        let loop = loop
        let subscription: MediaBusSubscription
        let bus = bus
        let timeout = configuration.gopRequestTimeout
        let logger = logger
        do {
            // Subscribed before the GOP is fetched, so what arrives continues it. A gap later
            // on (a NATS reconnect, a lost message) is refilled from the GOP in the same way,
            // so viewers resume at once rather than at the next keyframe.
            subscription = try MediaBusSubscription(bus: bus, subject: subject, joinsAtSyncPoint: false, onGap: {
                let start = feed.withLockedValue { feed -> Bool in
                    guard feed.hub != nil, !feed.refilling else { return false }
                    feed.refilling = true
                    return true
                }
                guard start else { return }
                Task { await Self.refill(feed: feed, bus: bus, subject: subject, timeout: timeout, logger: logger) }
            }) { frame, startsNewClock in
                Self.deliver(frame, startsNewClock: startsNewClock, feed: feed, loop: loop, logger: logger, subject: subject)
            }
        } catch {
            logger.warning("cannot subscribe to the bus", metadata: ["subject": "\(subject)", "error": "\(error)"])
            return nil
        }
        let gop: [MediaFrame]
        do {
            let reply = try await bus.request(subject: MediaBusGOP.subject(for: subject), payload: ByteBuffer(), timeout: configuration.gopRequestTimeout)
            gop = try MediaBusGOP.decode(reply)
        } catch {
            // No node publishes it (no responders), or it did not answer in time.
            subscription.cancel()
            return nil
        }
        // The publishing node's hub normalised the timeline already, and every node that
        // mirrors a rendition must see the same timestamps (a relay switching from a dead
        // transcoder to its replacement continues where it was): no re-basing here. The
        // configuration records replayed with the GOP carry their original (early)
        // timestamps, which a re-basing normaliser would take for a jump.
        var mirrorConfiguration = registry.hubConfiguration
        mirrorConfiguration.timestampJumpThreshold = nil
        let (hub, publisher) = await registry.hubForPublishing(path, configuration: mirrorConfiguration)
        guard case .attached = hub.attachPublisher(id: publisher, owner: "bus", evict: {}) else {
            subscription.cancel()
            return await registry.hub(for: path)
        }
        for frame in gop {
            hub.publish(frame, publisher: publisher)
        }
        // From here on live frames go straight in, after those held meanwhile.
        feed.withLockedValue { feed in
            for frame in gop where !frame.isSequenceHeader && frame.kind != .script {
                feed.lastTimestamp[frame.kind] = max(feed.lastTimestamp[frame.kind] ?? .min, frame.timestamp)
            }
            for frame in feed.held where Self.isNew(frame, in: &feed) {
                hub.publish(frame, publisher: publisher)
            }
            feed.held = []
            feed.hub = hub
            feed.publisher = publisher
        }
        hub.flush(force: true)
        let mirror = Mirror(hub: hub, subscription: subscription, feed: feed)
        // The publisher says when the stream ends (see `BusPublication`).
        let endSubject = MediaBusGOP.endSubject(for: subject)
        if let end = try? bus.subscribe(subject: endSubject, handler: { message in
            // The end of a publisher session the mirror no longer follows (the encoder moved
            // to another ingest, and the one it left ends the stream when its grace runs
            // out) is not the stream's. An end without an epoch is taken as it is.
            var payload = message.payload
            if let epoch = payload.readInteger(as: UInt32.self), let current = subscription.currentEpoch, epoch != current {
                logger.info("an earlier publisher session's end, ignored: the stream goes on from a newer one", metadata: ["subject": "\(subject)"])
                return
            }
            mirror.ended.withLockedValue { $0 = true }
        }) {
            mirror.endSubscription.withLockedValue { $0 = end }
        }
        mirrors.withLockedValue { $0[path] = mirror }
        logger.info("relaying from the bus", metadata: ["stream": "\(path)", "subject": "\(subject)", "gop_frames": "\(gop.count)"])
        await onOpen(hub)
        watchIdle(path, mirror: mirror, registry: registry)
        return hub
    }

    /// A new publisher session whose first frame is this far behind the mirror's newest, or
    /// `continuedAhead` ahead of it, continues the mirror's timeline (its ingest took the
    /// stream over from the other): no re-basing.
    static let continuedTolerance: Int64 = 1000
    static let continuedAhead: Int64 = 10_000

    /// Frames held while a GOP is fetched, at most: 4,096 is over two minutes of 30 fps video.
    static let maxHeldFrames = 4096

    /// After a gap on the bus: fetches the publisher's GOP, which holds the frames lost, and
    /// publishes those newer than what viewers have, then the live frames held meanwhile. Same
    /// publisher session, so the frames continue the chain viewers decode. Without an answer,
    /// the frames after the gap wait for a keyframe (the reassembler's rule without refill).
    private static func refill(feed: NIOLockedValueBox<Feed>, bus: any Bus, subject: MediaBusSubject, timeout: Duration, logger: Logger) async {
        let gop: [MediaFrame]?
        do {
            gop = try MediaBusGOP.decode(try await bus.request(subject: MediaBusGOP.subject(for: subject), payload: ByteBuffer(), timeout: timeout))
        } catch {
            gop = nil
        }
        let (refilled, used) = feed.withLockedValue { feed -> (Int, Bool) in
            defer {
                feed.held = []
                feed.refilling = false
            }
            guard let hub = feed.hub else { return (0, false) }
            var refilled = 0
            let used = gop != nil && feed.offset == 0
            // A re-based mirror's frames are not on the publisher's clock, nor is a GOP (which
            // the ingest left behind may answer during its grace): it cannot fill the gap, and
            // the frames after it wait for a keyframe.
            if let gop, used {
                for frame in gop where !frame.isSequenceHeader && frame.kind != .script && Self.isNew(frame, in: &feed) {
                    hub.publish(frame, publisher: feed.publisher)
                    refilled += 1
                }
            } else {
                feed.awaitingKeyframe = true
            }
            for frame in feed.held where Self.isNew(frame, in: &feed, live: true) {
                hub.publish(frame, publisher: feed.publisher)
            }
            hub.flush(force: true)
            return (refilled, used)
        }
        BusStreamSourceMetrics.refills(used ? "refilled" : "no_answer")
        logger.info("a gap on the bus: \(used ? "refilled \(refilled) frames from the publisher's GOP" : "no usable GOP; resuming at the next keyframe")", metadata: ["subject": "\(subject)"])
    }

    /// On the bus's delivery thread: hold, drop or publish one live frame. The first frame
    /// of a publisher session with a new clock (`startsNewClock`) sets the offset that makes
    /// its timeline continue the mirror's.
    private static func deliver(
        _ frame: MediaFrame, startsNewClock: Bool, feed: NIOLockedValueBox<Feed>, loop: any EventLoop, logger: Logger, subject: MediaBusSubject
    ) {
        var frame = frame
        var rebased: Int64?
        let deferred: (hub: StreamHub, after: TimeAmount)? = feed.withLockedValue { feed in
            let now = NIODeadline.now()
            let lastMediaAt = feed.lastMediaAt
            feed.lastFrameAt = now
            if !frame.isSequenceHeader, frame.kind != .script { feed.lastMediaAt = now }
            if startsNewClock {
                // After the newest frame viewers have (or hold), by the time that passed
                // since it came: an encoder's clock runs with the wall clock, so each of a
                // stream's renditions (mirrored apart, its own publication on the bus) gets
                // the same offset, give or take the delivery's jitter, and they stay aligned.
                // The outage shows as the gap it was.
                let newest = max(feed.lastTimestamp.values.max() ?? .min, feed.held.lazy.map(\.timestamp).max() ?? .min)
                // A session whose ingest continued the timeline (it took the stream over while
                // the other node still answered: `BusPublications.continueTimelineFromElsewhere`)
                // is taken as it is, so that every node that mirrors it sees the same
                // timestamps; only a clock of its own (the other node was gone) is re-based.
                let (ahead, aheadOverflow) = frame.timestamp.subtractingReportingOverflow(newest)
                if newest != .min, !aheadOverflow, (-Self.continuedTolerance...Self.continuedAhead).contains(ahead) {
                    feed.offset = 0
                } else if newest != .min {
                    let elapsed = max(1, Int64((now - lastMediaAt).nanoseconds / 1_000_000))
                    let (next, overflowNext) = newest.addingReportingOverflow(elapsed)
                    let (offset, overflow) = next.subtractingReportingOverflow(frame.timestamp)
                    if !overflowNext, !overflow {
                        feed.offset = offset
                        rebased = offset
                    }
                }
                frame.isDiscontinuity = true
            }
            if feed.offset != 0 {
                // A hostile timestamp must not trap: such a frame is dropped.
                let (shifted, overflow) = frame.timestamp.addingReportingOverflow(feed.offset)
                guard !overflow else { return nil }
                frame.timestamp = shifted
            }
            guard let hub = feed.hub, !feed.refilling else {
                // Held while the GOP is fetched, bounded: past the bound the frames after the
                // held ones must wait for a keyframe.
                if feed.held.count < Self.maxHeldFrames {
                    feed.held.append(frame)
                } else {
                    feed.awaitingKeyframe = true
                }
                return nil
            }
            guard isNew(frame, in: &feed, live: true) else { return nil }
            hub.publish(frame, publisher: feed.publisher)
            // Merged wake-ups: when the hub defers this burst, one forced flush is scheduled
            // for when it is due, so the last frames of a burst never wait for the next one.
            guard let deferral = hub.flush(), !feed.flushScheduled else { return nil }
            feed.flushScheduled = true
            return (hub, deferral)
        }
        if let rebased {
            BusStreamSourceMetrics.newClocks.increment()
            logger.info("a new publisher session with its own clock: its timeline continues the mirror's", metadata: ["subject": "\(subject)", "offset_ms": "\(rebased)"])
        }
        guard let deferred else { return }
        loop.scheduleTask(in: deferred.after) {
            feed.withLockedValue { $0.flushScheduled = false }
            deferred.hub.flush(force: true)
        }
    }

    /// Live frames already delivered by the GOP reply are skipped; configuration records
    /// always pass.
    ///
    /// Once the mirror is open (`live`), the bus delivers each frame once, so a video keyframe
    /// that is not newer than what viewers have comes from a new publisher session on the
    /// same subject: a moved transcode job whose new transcoder started from the source's
    /// cached GOP. Its keyframe is dropped (viewers have later frames), and so are the frames
    /// that refer to it, until a keyframe that is newer: passing them would show viewers
    /// P-frames of a picture they never got.
    private static func isNew(_ frame: MediaFrame, in feed: inout Feed, live: Bool = false) -> Bool {
        guard !frame.isSequenceHeader, frame.kind != .script else { return true }
        if let last = feed.lastTimestamp[frame.kind], frame.timestamp <= last {
            if live, frame.kind == .video, frame.isKeyframe { feed.awaitingKeyframe = true }
            return false
        }
        if frame.kind == .video, feed.awaitingKeyframe {
            guard frame.isKeyframe else { return false }
            feed.awaitingKeyframe = false
        }
        feed.lastTimestamp[frame.kind] = frame.timestamp
        return true
    }

    /// Checks every second whether the mirror is still watched and still fed; ends it when
    /// it is not, and takes its hub out of `registry` (a relay-only node registers nothing
    /// else that would ever replace it, so ended mirrors would pile up there, one per path).
    private func watchIdle(_ path: RenditionPath, mirror: Mirror, registry: StreamRegistry) {
        let grace = TimeAmount(configuration.idleGrace)
        let stale = TimeAmount(configuration.staleAfter)
        let mirrors = mirrors
        let logger = logger
        Task {
            var reason = "ended"
            while !mirror.hub.isEnded {
                try? await Task.sleep(for: .milliseconds(250))
                if mirror.ended.withLockedValue({ $0 }) {
                    reason = "its publisher ended it"
                    break
                }
                if NIODeadline.now() - mirror.feed.withLockedValue({ $0.lastFrameAt }) >= stale {
                    reason = "no media arrived for \(stale.nanoseconds / 1_000_000_000) s"
                    break
                }
                // Viewers and pipelines that stand for consumers elsewhere (a transcoder's
                // feed). Not the HLS segmenter, which every mirror has: HLS players keep the
                // mirror through `touch`.
                if mirror.hub.statistics.holders > 0 {
                    mirror.lastUse.withLockedValue { $0 = .now() }
                    continue
                }
                if NIODeadline.now() - mirror.lastUse.withLockedValue({ $0 }) >= grace {
                    reason = "nobody watches it"
                    break
                }
            }
            mirror.subscription.cancel()
            mirror.endSubscription.withLockedValue { $0 }?.cancel()
            mirrors.withLockedValue { mirrors in
                if mirrors[path] === mirror { mirrors[path] = nil }
            }
            mirror.hub.flush(force: true)
            mirror.hub.end()
            // Only this mirror's hub: a new mirror may already have taken the path over.
            await registry.forget(path, hub: mirror.hub)
            logger.info("stopped relaying", metadata: ["stream": "\(path)", "reason": "\(reason)"])
        }
    }
}

enum BusStreamSourceMetrics {
    /// Publisher sessions with a clock of their own re-based to continue a mirror (an
    /// encoder that moved to another ingest).
    static let newClocks = Counter(label: "estuary_relay_bus_new_clocks_total")

    /// Gaps on the bus refilled from the publisher's GOP, or left to the next keyframe.
    static func refills(_ outcome: String) {
        Counter(label: "estuary_relay_bus_gap_refills_total", dimensions: [("outcome", outcome)]).increment()
    }
}

enum HubBridgeMetrics {
    /// Plays answered "not found" because `BusStreamSource.Configuration.maxConcurrentOpens`
    /// lookups were already in flight.
    static let refusedOpens = Counter(label: "estuary_relay_bus_lookups_refused_total")
}
