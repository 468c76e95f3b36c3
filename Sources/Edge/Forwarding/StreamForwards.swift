import Logging
import Media
import Session

/// Every forward of this node (`StreamForward`), by stream: started when a stream of an
/// application with `forwards` is published, forgotten once stopped. At most
/// `maxForwards` run at once; beyond it a stream is not forwarded (and that is logged).
public actor StreamForwards {
    private var forwards: [StreamPath: [StreamForward]] = [:]
    private var targets: [String: [ForwardTarget]]
    /// Every live stream published here, so that targets a reload adds reach streams already
    /// live; weak, and swept when their hubs end.
    private var live: [StreamPath: WeakHub] = [:]
    private struct WeakHub {
        weak var hub: StreamHub?
    }
    private let maxForwards: Int
    /// The size of the tables at which `start` sweeps them next.
    private var sweepAt = 256
    private let logger: Logger
    /// Makes each push connection a session (`StreamForward`); set once the node's
    /// admission exists, which is made after its observers (forwarding is one).
    private var admission: (any SessionAdmission)?

    public init(targets: [String: [ForwardTarget]], maxForwards: Int = 4096, logger: Logger) {
        self.targets = targets
        self.maxForwards = maxForwards
        self.logger = logger
    }

    public func attach(_ admission: any SessionAdmission) {
        self.admission = admission
    }

    /// Starts forwarding `hub`'s stream to its application's targets, unless it already is
    /// (a publisher that reconnects within the grace period keeps its forwards).
    public func start(_ path: StreamPath, hub: StreamHub) {
        sweepIfGrown()
        if live.count < maxForwards { live[path] = WeakHub(hub: hub) }
        guard let targets = targets[path.app], !targets.isEmpty else { return }
        if let running = forwards[path], running.contains(where: { !$0.isStopped }) { return }
        // Running ones only: stopped forwards wait in the table for the next sweep.
        let count = forwards.values.reduce(0) { $0 + $1.filter { !$0.isStopped }.count }
        guard count + targets.count <= maxForwards else {
            logger.warning("not forwarding: \(count) forwards run already", metadata: ["stream": "\(path)"])
            return
        }
        forwards[path] = targets.map { StreamForward(path: path, hub: hub, target: $0, admission: admission, logger: logger) }
    }

    /// New targets (a configuration reload), applied to the streams live now as well as to
    /// those published later: a forward whose target is gone stops, a target added starts
    /// for every live stream of its application, and a forward that stays keeps running.
    public func setTargets(_ new: [String: [ForwardTarget]]) {
        targets = new
        sweep()
        for (path, running) in forwards {
            let wanted = Set(new[path.app] ?? [])
            for forward in running where !wanted.contains(forward.target) { forward.stop() }
        }
        sweep()
        for (path, entry) in live {
            guard let hub = entry.hub, !hub.isEnded, let wanted = new[path.app], !wanted.isEmpty else { continue }
            let running = Set((forwards[path] ?? []).filter { !$0.isStopped }.map(\.target))
            let missing = wanted.filter { !running.contains($0) }
            let count = forwards.values.reduce(0) { $0 + $1.count }
            guard !missing.isEmpty, count + missing.count <= maxForwards else { continue }
            forwards[path, default: []] += missing.map { StreamForward(path: path, hub: hub, target: $0, admission: admission, logger: logger) }
        }
        logger.info("forwards reconfigured", metadata: ["applications": "\(new.keys.sorted())"])
    }

    /// What every forward is doing, for the admin API.
    public func statuses() -> [StreamForward.Status] {
        sweep()
        return forwards.keys.sorted { "\($0)" < "\($1)" }.flatMap { forwards[$0]?.map(\.currentStatus) ?? [] }
    }

    /// Stops every forward (shutdown).
    public func stopAll() {
        for forward in forwards.values.joined() { forward.stop() }
    }

    /// Sweeps once the tables have doubled since the last sweep, or are full: a publish
    /// costs amortized O(1), not a walk of every stream live on the node.
    private func sweepIfGrown() {
        guard live.count + forwards.count >= sweepAt || live.count >= maxForwards else { return }
        sweep()
    }

    private func sweep() {
        forwards = forwards.compactMapValues { running in
            let left = running.filter { !$0.isStopped }
            return left.isEmpty ? nil : left
        }
        live = live.filter { $0.value.hub.map { !$0.isEnded } ?? false }
        sweepAt = max(256, 2 * (live.count + forwards.count))
    }
}
