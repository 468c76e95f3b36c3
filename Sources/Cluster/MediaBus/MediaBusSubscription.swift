import Media
import Metrics
import NIOConcurrencyHelpers
import NIOCore

/// A subscription to one rendition's media: bus messages in, complete `MediaFrame`s out,
/// after reassembly and the gap policy of `MediaBusReassembler`.
///
/// Bad messages are dropped, counted here by reason and in
/// `estuary_bus_messages_dropped_total{reason}`; they never reach the handler and never
/// disturb the reassembly in progress.
public final class MediaBusSubscription: Sendable {
    public struct Statistics: Sendable, Equatable {
        public var reassembly = MediaBusReassembler.Statistics()
        /// Rejected messages by `MediaBusFrameError.reason`.
        public var rejected: [String: UInt64] = [:]
    }

    public let subject: MediaBusSubject
    private struct State: Sendable {
        var reassembler: MediaBusReassembler
        var rejected: [String: UInt64] = [:]
    }

    private let state: NIOLockedValueBox<State>
    private let subscription: NIOLockedValueBox<BusSubscription?>

    /// Subscribes to `subject` on `bus`. `handler` runs on the bus's delivery thread (see
    /// `Bus`) and must not block.
    ///
    /// - Parameters:
    ///   - maxFrameBytes: the reassembly bound; larger announced frames are rejected.
    ///   - joinsAtSyncPoint: see `MediaBusReassembler`; false after fetching the GOP.
    ///   - onGap: with it, frames after a gap are delivered at once (`MediaBusReassembler`'s
    ///     `refillsGaps`), and it is called on the delivery thread first, so that the
    ///     receiver can refill what was lost; without it, frames wait for a sync point.
    ///   - metrics: where the dropped-messages counter goes; the global factory by default.
    ///   - handler: each frame, with `MediaBusReassembler.startsNewClock`: true for the first
    ///     media frame of a new publisher session whose clock is its own (re-base it).
    public init(
        bus: any Bus,
        subject: MediaBusSubject,
        maxFrameBytes: Int = MediaBusReassembler.defaultMaxFrameBytes,
        joinsAtSyncPoint: Bool = true,
        onGap: (@Sendable () -> Void)? = nil,
        metrics: any MetricsFactory = MetricsSystem.factory,
        handler: @escaping @Sendable (_ frame: MediaFrame, _ startsNewClock: Bool) -> Void
    ) throws(BusError) {
        self.subject = subject
        let state = NIOLockedValueBox(State(reassembler: MediaBusReassembler(
            maxFrameBytes: maxFrameBytes, joinsAtSyncPoint: joinsAtSyncPoint, refillsGaps: onGap != nil)))
        self.state = state
        self.subscription = NIOLockedValueBox(nil)
        let busSubscription = try bus.subscribe(subject: subject.subject) { message in
            // One delivery thread per subscription: the lock is uncontended, and held
            // only while parsing, never while the handler runs.
            let (frame, newClock, newGaps) = state.withLockedValue { (state: inout State) -> (MediaFrame?, Bool, UInt64) in
                let gapsBefore = state.reassembler.statistics.gaps
                do throws(MediaBusFrameError) {
                    let frame = try state.reassembler.receive(message.payload)
                    return (frame, state.reassembler.startsNewClock, state.reassembler.statistics.gaps - gapsBefore)
                } catch {
                    state.rejected[error.reason, default: 0] += 1
                    MediaBusMetrics.droppedMessage(reason: error.reason, factory: metrics)
                    return (nil, false, state.reassembler.statistics.gaps - gapsBefore)
                }
            }
            for _ in 0..<newGaps {
                MediaBusMetrics.gap(factory: metrics)
            }
            if newGaps > 0 { onGap?() }
            if let frame {
                handler(frame, newClock)
            }
        }
        subscription.withLockedValue { $0 = busSubscription }
    }

    /// The epoch (publisher session) the subscription follows now.
    public var currentEpoch: UInt32? {
        state.withLockedValue { $0.reassembler.currentEpoch }
    }

    public var statistics: Statistics {
        state.withLockedValue { Statistics(reassembly: $0.reassembler.statistics, rejected: $0.rejected) }
    }

    /// Unsubscribes. Idempotent; also done when the subscription is released.
    public func cancel() {
        subscription.withLockedValue { $0 }?.cancel()
    }
}
