import NIOCore
import Synchronization

/// How many viewers a node serves, shared by all its hubs, so that merged writes adapt to
/// load: while the node serves few viewers, each is woken at once for every burst (the
/// lowest latency, at a cost that does not matter at that size); as viewers grow, wake-ups
/// merge over a growing interval, up to `HubConfiguration.wakeInterval` from `fullViewers`
/// on, where merging is what keeps a node's CPU per delivered Gbit low.
public final class WakeLoad: Sendable, Equatable {
    /// Up to this many viewers on the node, wake-ups are not merged.
    public let lowViewers: Int
    /// From this many, they are merged over the whole configured interval.
    public let fullViewers: Int
    private let viewers = Atomic<Int>(0)

    public init(lowViewers: Int = 20, fullViewers: Int = 300) {
        self.lowViewers = max(0, lowViewers)
        self.fullViewers = max(self.lowViewers + 1, fullViewers)
    }

    /// Viewers on the node now.
    public var current: Int { viewers.load(ordering: .relaxed) }

    func add(_ count: Int) {
        guard count != 0 else { return }
        viewers.add(count, ordering: .relaxed)
    }

    /// The merge interval for `configured` at the current load: 0 up to `lowViewers`, then
    /// growing linearly to `configured` at `fullViewers`.
    public func interval(_ configured: TimeAmount) -> TimeAmount {
        let load = current
        guard load > lowViewers else { return .zero }
        guard load < fullViewers else { return configured }
        return .nanoseconds(configured.nanoseconds * Int64(load - lowViewers) / Int64(fullViewers - lowViewers))
    }

    public static func == (lhs: WakeLoad, rhs: WakeLoad) -> Bool { lhs === rhs }
}
