import Media
import NIOCore
import Synchronization

/// The cut between two transcoders publishing one job's rungs, when a draining transcoder
/// (the outgoing) hands its job to another (the incoming), so that rung viewers on the
/// relays see one stream, without a gap and without frames from both.
///
/// Both transcoders decode the same source from the bus, and every rung keyframe is forced
/// at a source keyframe's PTS, so a source keyframe is a point where either transcoder's
/// rungs can start or stop. They agree on one:
///
/// 1. The incoming starts the job, encodes, and publishes nothing yet. It asks the
///    outgoing (`handover.<app>.<name>`) with the newest source PTS it has read.
/// 2. The outgoing answers the threshold: that PTS or its own newest, whichever is later.
///    Both sides take the **first source video keyframe after the threshold** as the cut
///    `K`: it is still ahead of the outgoing, and the incoming remembers the recent
///    keyframes in case it has already read it.
/// 3. The outgoing publishes each rung's frames before `K` and none from `K` on; when a
///    rung's video reaches `K` it says so (`handover.done.<app>.<name>`, the rung's name),
///    after its last frame, on the same connection.
/// 4. The incoming holds each rung's frames from `K` on (and its configuration records)
///    until the outgoing's word for that rung, then publishes them, and everything after.
///    Without the word within `releaseTimeout` of reaching `K`, it publishes anyway; if no
///    outgoing answers at all, it publishes from its first keyframe.
///
/// Relays then get the outgoing's epoch up to `K − 1` frame and the incoming's from the
/// keyframe at `K`: on one timeline, since rung timestamps are the source's.
///
/// One per job; a job that runs normally is `direct` and only pays an uncontended lock per
/// frame. Held frames are bounded per rung (`maxHeldBytes`, oldest dropped first).
public final class RungHandover: Sendable {
    public enum Mode: Sendable, Equatable {
        /// Publishes everything (no handover under way).
        case direct
        /// Takes over from a draining transcoder: publishes nothing before the cut.
        case incoming
        /// Hands over: publishes nothing from the cut on.
        case outgoing
    }

    private struct Rung {
        var publish: (@Sendable (MediaFrame) -> Void)?
        /// Incoming: the latest metadata and configuration records, sent at release.
        var records: [MediaFrame] = []
        /// Incoming: media held before release.
        var held: [MediaFrame] = []
        var heldBytes = 0
        /// Incoming: when the rung's video reached the cut.
        var reachedCutAt: ContinuousClock.Instant?
        /// Incoming: the outgoing said it stopped this rung.
        var outgoingDone = false
        /// Incoming: released, publishing directly now.
        var live = false
        /// Outgoing: the rung's video reached the cut.
        var cut = false
        /// Incoming: the held video starts at a keyframe (leading P-frames are useless).
        var sawKeyframe = false
    }

    private struct State {
        var mode: Mode
        var threshold: Int64?
        var cut: Int64?
        var newest: Int64?
        var recentKeyframes: [Int64] = []
        var rungs: [String: Rung] = [:]
        /// Incoming: no outgoing answered; every rung publishes from its first keyframe.
        var abandoned = false
        var incomingSince = ContinuousClock.now
        var allCutReported = false
    }

    /// Source keyframes remembered, to find a cut the incoming has already read.
    static let rememberedKeyframes = 16
    /// Rungs per job (a ladder has a handful; a hostile or broken assignment cannot grow
    /// the table past this).
    public static let maxRungs = 32

    public let maxHeldBytes: Int
    public let releaseTimeout: Duration
    /// An incoming that never reaches a cut within this long publishes from its next keyframe.
    public let incomingTimeout: Duration
    private let state: Mutex<State>
    /// Outgoing: a rung reached the cut (its name).
    private let onRungCut: @Sendable (String) -> Void
    /// Outgoing: every bound rung reached the cut; the job can stop.
    private let onAllCut: @Sendable () -> Void

    public init(
        mode: Mode,
        maxHeldBytes: Int = 8 << 20,
        releaseTimeout: Duration = .seconds(1),
        incomingTimeout: Duration = .seconds(20),
        onRungCut: @escaping @Sendable (String) -> Void = { _ in },
        onAllCut: @escaping @Sendable () -> Void = {}
    ) {
        self.state = Mutex(State(mode: mode))
        self.maxHeldBytes = maxHeldBytes
        self.releaseTimeout = releaseTimeout
        self.incomingTimeout = incomingTimeout
        self.onRungCut = onRungCut
        self.onAllCut = onAllCut
    }

    public var mode: Mode { state.withLock { $0.mode } }

    /// The cut, once both sides know it: the PTS of the source keyframe from which the
    /// incoming publishes.
    public var cut: Int64? { state.withLock { $0.cut } }

    /// The newest source video PTS read so far.
    public var newestSourceTimestamp: Int64? { state.withLock { $0.newest } }

    // MARK: The source

    /// Every source frame, on the feed's thread, before the pipeline gets it: the cut must
    /// be known before the rungs' frames at it come out.
    public func sourceFrame(_ frame: MediaFrame) {
        guard frame.kind == .video, !frame.isSequenceHeader else { return }
        let pts = frame.presentationTimestamp
        state.withLock { state in
            state.newest = max(state.newest ?? pts, pts)
            guard frame.isKeyframe else { return }
            if state.recentKeyframes.count == Self.rememberedKeyframes { state.recentKeyframes.removeFirst() }
            state.recentKeyframes.append(pts)
            if state.cut == nil, let threshold = state.threshold, pts > threshold {
                state.cut = pts
            }
        }
    }

    // MARK: Agreeing on the cut

    /// Outgoing: a new transcoder asks to take over, having read the source up to
    /// `proposed`. Returns the threshold both use; nil while this job is itself still
    /// taking over (it cannot hand over what it does not publish yet).
    public func beginOutgoing(proposed: Int64) -> Int64? {
        state.withLock { state -> Int64? in
            switch state.mode {
            case .incoming:
                return nil
            case .outgoing:
                return state.threshold
            case .direct:
                let threshold = max(proposed, state.newest ?? proposed)
                state.mode = .outgoing
                state.threshold = threshold
                state.cut = nil
                return threshold
            }
        }
    }

    /// Incoming: the outgoing's threshold. The cut is the first source keyframe after it,
    /// already read or still to come.
    public func adopt(threshold: Int64) {
        state.withLock { state in
            guard state.mode == .incoming, state.threshold == nil else { return }
            state.threshold = threshold
            state.cut = state.recentKeyframes.first { $0 > threshold }
            guard state.cut != nil else { return }
            advanceAll(&state)
        }
    }

    /// Incoming: nobody answered the request (the outgoing is gone): publish from the
    /// first keyframe.
    public func abandon() {
        state.withLock { state in
            guard state.mode == .incoming else { return }
            state.abandoned = true
            advanceAll(&state)
        }
    }

    /// Incoming: the outgoing stopped `rung` after its last frame before the cut.
    public func outgoingStopped(rung: String) {
        state.withLock { state in
            guard state.mode == .incoming, state.rungs[rung] != nil else { return }
            state.rungs[rung]?.outgoingDone = true
            advanceAll(&state)
        }
    }

    /// Whether this job answers GOP requests for `rung`: not while it publishes nothing
    /// (an incoming before release), since its GOP would not be what relays receive.
    public func answersGOPRequests(for rung: String) -> Bool {
        state.withLock { state in
            state.mode != .incoming || state.rungs[rung]?.live == true
        }
    }

    // MARK: The rungs

    /// Registers `rung`'s publisher; false (the rung then publishes directly) beyond `maxRungs`.
    public func bind(rung: String, publish: @escaping @Sendable (MediaFrame) -> Void) -> Bool {
        state.withLock { state in
            guard state.rungs[rung] != nil || state.rungs.count < Self.maxRungs else { return false }
            state.rungs[rung, default: Rung()].publish = publish
            return true
        }
    }

    /// One of `rung`'s frames, from its publication: published, held or dropped.
    public func offer(_ frame: MediaFrame, rung: String) {
        var rungCut = false
        var allCut = false
        state.withLock { state in
            guard var entry = state.rungs[rung], let publish = entry.publish else { return }
            switch state.mode {
            case .direct:
                publish(frame)
                return
            case .outgoing:
                guard let cut = state.cut, !Self.isRecord(frame) else {
                    if !entry.cut { publish(frame) }
                    return
                }
                if Self.time(of: frame) < cut {
                    if !entry.cut { publish(frame) }
                    return
                }
                if frame.kind == .video, !entry.cut {
                    entry.cut = true
                    state.rungs[rung] = entry
                    rungCut = true
                    if !state.allCutReported, state.rungs.values.allSatisfy({ $0.cut || $0.publish == nil }) {
                        state.allCutReported = true
                        allCut = true
                    }
                }
                return
            case .incoming:
                if entry.live {
                    publish(frame)
                    return
                }
                if Self.isRecord(frame) {
                    entry.records.removeAll { $0.kind == frame.kind && $0.isSequenceHeader == frame.isSequenceHeader }
                    entry.records.append(frame)
                } else {
                    entry.held.append(frame)
                    entry.heldBytes += frame.payload.readableBytes
                    while entry.heldBytes > maxHeldBytes, !entry.held.isEmpty {
                        entry.heldBytes -= entry.held.removeFirst().payload.readableBytes
                    }
                }
                state.rungs[rung] = entry
                advance(rung, &state, now: .now)
            }
        }
        // Outside the lock: the callbacks publish on the bus and hop to the job's actor.
        if rungCut { onRungCut(rung) }
        if allCut { onAllCut() }
    }

    // MARK: Incoming release

    /// Drops what `rung` holds before the cut (or before its first keyframe, abandoned),
    /// and once it may publish, publishes its records and held frames and makes it live.
    /// Under the lock: a rung's later frames must not overtake its released ones.
    private func advance(_ rung: String, _ state: inout State, now: ContinuousClock.Instant) {
        guard var entry = state.rungs[rung], let publish = entry.publish, !entry.live else { return }
        if !state.abandoned, state.cut == nil, now - state.incomingSince >= incomingTimeout {
            // No cut agreed in all this time: publish from the next keyframe.
            state.abandoned = true
        }
        let start = state.abandoned
            ? entry.held.first { $0.kind == .video && $0.isKeyframe }.map(Self.time(of:))
            : state.cut
        guard let start else { return }
        // Nothing before the start, and video only from a keyframe at or after it.
        var kept: [MediaFrame] = []
        kept.reserveCapacity(entry.held.count)
        for frame in entry.held where Self.time(of: frame) >= start {
            if frame.kind == .video, !entry.sawKeyframe {
                guard frame.isKeyframe else { continue }
                entry.sawKeyframe = true
            }
            kept.append(frame)
        }
        entry.held = kept
        entry.heldBytes = kept.reduce(0) { $0 + $1.payload.readableBytes }
        if entry.reachedCutAt == nil, entry.sawKeyframe {
            entry.reachedCutAt = now
        }
        if let reached = entry.reachedCutAt, state.abandoned || entry.outgoingDone || now - reached >= releaseTimeout {
            for frame in entry.records + entry.held { publish(frame) }
            entry.live = true
            entry.records = []
            entry.held = []
            entry.heldBytes = 0
        }
        state.rungs[rung] = entry
        if state.rungs.values.allSatisfy({ $0.live || $0.publish == nil }) {
            // Every rung took over: this job is an ordinary one now (and may hand over in turn).
            state.mode = .direct
            state.threshold = nil
            state.cut = nil
        }
    }

    private func advanceAll(_ state: inout State) {
        let now = ContinuousClock.now
        for rung in state.rungs.keys.sorted() { advance(rung, &state, now: now) }
    }

    private static func isRecord(_ frame: MediaFrame) -> Bool {
        frame.isSequenceHeader || frame.kind == .script
    }

    /// Where a frame sits on the rung's timeline: a picture's PTS (rung keyframes sit at
    /// source keyframes' PTS), an audio frame's timestamp.
    private static func time(of frame: MediaFrame) -> Int64 {
        frame.kind == .video ? frame.presentationTimestamp : frame.timestamp
    }
}
