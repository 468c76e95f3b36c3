/// The viewers of one event loop. Confined to that loop (reach it through `NIOLoopBound`).
final class ViewerRegistry {
    /// Totals that are cheap to collect while polling.
    struct Totals: Sendable {
        var viewers = 0
        var bytes = 0
        var stalls = 0
        var withFirstFrame = 0
        var closed = 0
        /// Viewers still open without a first frame.
        var waiting = 0

        static func + (lhs: Totals, rhs: Totals) -> Totals {
            Totals(
                viewers: lhs.viewers + rhs.viewers,
                bytes: lhs.bytes + rhs.bytes,
                stalls: lhs.stalls + rhs.stalls,
                withFirstFrame: lhs.withFirstFrame + rhs.withFirstFrame,
                closed: lhs.closed + rhs.closed,
                waiting: lhs.waiting + rhs.waiting
            )
        }
    }

    private var viewers: [ViewerStats] = []

    init() {}

    func add(_ viewer: ViewerStats) {
        self.viewers.append(viewer)
    }

    func totals() -> Totals {
        var totals = Totals()
        totals.viewers = self.viewers.count
        for viewer in self.viewers {
            totals.bytes += viewer.bytes
            totals.stalls += viewer.stalls
            if viewer.firstFrame != nil { totals.withFirstFrame += 1 }
            if viewer.closedAt != nil { totals.closed += 1 }
            if viewer.firstFrame == nil, viewer.closedAt == nil { totals.waiting += 1 }
        }
        return totals
    }

    func snapshots() -> [ViewerSnapshot] {
        self.viewers.map { $0.snapshot() }
    }
}

@available(*, unavailable)
extension ViewerRegistry: Sendable {}
