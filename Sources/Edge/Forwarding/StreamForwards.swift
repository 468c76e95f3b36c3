import Logging
import Media
import Session

/// Every forward of this node (`StreamForward`), by stream: started when a stream of an
/// application with `forwards` is published, forgotten once stopped. At most
/// `maxForwards` run at once; beyond it a stream is not forwarded (and that is logged).
public actor StreamForwards {
    private var forwards: [StreamPath: [StreamForward]] = [:]
    private let targets: [String: [ForwardTarget]]
    private let maxForwards: Int
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
        guard let targets = targets[path.app], !targets.isEmpty else { return }
        sweep()
        if let running = forwards[path], running.contains(where: { !$0.isStopped }) { return }
        let count = forwards.values.reduce(0) { $0 + $1.count }
        guard count + targets.count <= maxForwards else {
            logger.warning("not forwarding: \(count) forwards run already", metadata: ["stream": "\(path)"])
            return
        }
        forwards[path] = targets.map { StreamForward(path: path, hub: hub, target: $0, admission: admission, logger: logger) }
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

    private func sweep() {
        forwards = forwards.filter { !$0.value.allSatisfy(\.isStopped) }
    }
}
