import NIOCore
import Synchronization

/// Bytes of HLS media held across every rendition of a node: the segments in the windows,
/// and the open segments as their frames are muxed.
///
/// Each rendition bounds its own window (`HLSConfiguration.maxRenditionBytes`) and its open
/// segment (`maxOpenSegmentBytes`); this bounds their sum, which `maxStreams` alone leaves
/// far above a machine's memory. Who gives way when it runs short:
/// - Past `pressureThreshold` (three quarters of the limit), a rendition that completes a
///   segment keeps only the shortest live window RFC 8216 allows (three segments): players
///   still find the live edge, with less behind it. The quarter left is for the segments in
///   progress, and for the moment between a segment's end and its window's trim.
/// - Only a frame that would take the node past `limit` itself is refused: its rendition
///   abandons the open segment (`estuary_hls_segments_abandoned_total{reason="node_budget"}`)
///   and starts again, marked as a discontinuity, at a keyframe once there is room.
/// - Its relief (`setRelief`, the `HLSService`) is asked for when the node crosses into
///   pressure, when a frame is refused, and when a stream ends under pressure: while the
///   node stays past three quarters, ended streams' windows go, then live windows are cut
///   to three, the largest first, without waiting for their next segment. One relief at a
///   time, at most every `reliefInterval`; a request meanwhile is not lost but runs after.
///
/// Lock-free: a rendition's segmenter charges each frame (a compare-and-swap on the node's
/// count, an add on its own), its window gives back a segment's bytes as the segment leaves.
public final class HLSByteBudget: Sendable {
    /// The most bytes held at once.
    public let limit: Int
    /// Above this many bytes held, windows shrink to `minimumWindow` segments.
    public let pressureThreshold: Int
    /// The shortest window a rendition keeps under pressure (RFC 8216, 6.2.2).
    public static let minimumWindow = 3

    private let used = Atomic<Int>(0)

    /// The shortest time between two reliefs.
    public static let reliefInterval = TimeAmount.milliseconds(250)
    private let relief = Mutex<(@Sendable () async -> Void)?>(nil)
    /// A relief task runs (it runs again while `reliefPending` is set).
    private let relieving = Atomic<Bool>(false)
    private let reliefPending = Atomic<Bool>(false)
    /// When the last relief started (uptime nanoseconds; 0: never).
    private let lastRelief = Atomic<UInt64>(0)

    public init(limit: Int) {
        self.limit = max(0, limit)
        self.pressureThreshold = self.limit - self.limit / 4
    }

    /// What gives bytes back when the node runs short, beyond what each rendition does on
    /// its own (see the type's documentation).
    public func setRelief(_ action: @escaping @Sendable () async -> Void) {
        relief.withLock { $0 = action }
    }

    /// Asks for the relief: it runs in a task of its own (this is called on a segmenter's
    /// event loop), at most every `reliefInterval`; a request while one runs, or within the
    /// interval, makes it run once more when it may.
    public func askForRelief() {
        guard let action = relief.withLock({ $0 }) else { return }
        // Sequentially consistent: a request's store and its look at `relieving`, against the
        // task's release of `relieving` and its look at the request, must not both miss.
        reliefPending.store(true, ordering: .sequentiallyConsistent)
        guard !relieving.exchange(true, ordering: .sequentiallyConsistent) else { return }
        Task {
            repeat {
                while reliefPending.exchange(false, ordering: .sequentiallyConsistent) {
                    let interval = UInt64(Self.reliefInterval.nanoseconds)
                    let last = lastRelief.load(ordering: .relaxed)
                    let since = NIODeadline.now().uptimeNanoseconds &- last
                    if last != 0, since < interval {
                        try? await Task.sleep(for: .nanoseconds(Int64(interval - since)))
                    }
                    lastRelief.store(NIODeadline.now().uptimeNanoseconds, ordering: .relaxed)
                    await action()
                }
                relieving.store(false, ordering: .sequentiallyConsistent)
                // A request between the last look and the flag's release: run again, unless
                // another task already took it.
            } while reliefPending.load(ordering: .sequentiallyConsistent) && !relieving.exchange(true, ordering: .sequentiallyConsistent)
        }
    }

    /// Bytes held now.
    public var inUse: Int { used.load(ordering: .relaxed) }

    /// Whether windows should keep only `minimumWindow` segments.
    public var isUnderPressure: Bool { inUse > pressureThreshold }

    /// A new rendition's account.
    public func account() -> Account { Account(budget: self) }

    fileprivate func reserve(_ bytes: Int) -> Bool {
        var current = used.load(ordering: .relaxed)
        while true {
            guard current + bytes <= limit else {
                askForRelief()
                return false
            }
            let (exchanged, original) = used.compareExchange(expected: current, desired: current + bytes, ordering: .relaxed)
            if exchanged {
                if current <= pressureThreshold, current + bytes > pressureThreshold { askForRelief() }
                return true
            }
            current = original
        }
    }

    fileprivate func release(_ bytes: Int) {
        used.subtract(bytes, ordering: .relaxed)
    }

    /// What one rendition holds: charged by its segmenter as frames go into the open
    /// segment, given back by the segmenter (an abandoned segment) or the window (a segment
    /// that leaves it). Whatever is still held when the rendition and its segmenter are both
    /// gone is given back then, so no path can leak the node's budget.
    public final class Account: Sendable {
        private let budget: HLSByteBudget
        private let held = Atomic<Int>(0)

        fileprivate init(budget: HLSByteBudget) {
            self.budget = budget
        }

        /// Bytes this rendition holds.
        public var bytesHeld: Int { held.load(ordering: .relaxed) }

        /// Whether the node's budget is under pressure (see `HLSByteBudget`).
        public var isUnderPressure: Bool { budget.isUnderPressure }
        /// Bytes the whole node holds, and its limit.
        public var nodeBytesInUse: Int { budget.inUse }
        public var nodeLimit: Int { budget.limit }

        /// Charges `bytes`; false, charging nothing, when they would take the node past its limit.
        public func reserve(_ bytes: Int) -> Bool {
            guard bytes > 0 else { return true }
            guard budget.reserve(bytes) else { return false }
            held.add(bytes, ordering: .relaxed)
            return true
        }

        /// Gives back `bytes` (at most what is held).
        public func release(_ bytes: Int) {
            guard bytes > 0 else { return }
            var current = held.load(ordering: .relaxed)
            while true {
                let amount = min(bytes, current)
                guard amount > 0 else { return }
                let (exchanged, original) = held.compareExchange(expected: current, desired: current - amount, ordering: .relaxed)
                if exchanged {
                    budget.release(amount)
                    return
                }
                current = original
            }
        }

        deinit {
            budget.release(held.load(ordering: .relaxed))
            HLSMetrics.bytesHeld(budget.inUse)
        }
    }
}
