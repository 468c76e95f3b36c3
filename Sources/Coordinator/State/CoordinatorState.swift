import Cluster
import Foundation
import GRDB
import Logging

/// The coordinator's logic over its store: node liveness, streams, transcode placement and
/// stream keys, with an audit event for every change.
///
/// Durable state lives only in the database: each operation is one write transaction that
/// reads what it needs and commits its changes with their events, so a `kill -9` loses at
/// most the operation in flight, and the actor's reentrancy (it suspends on every database
/// access) cannot interleave half-done changes. The actor itself holds only what nodes
/// re-send every second anyway: viewers per relay, and kicks and key revocations not yet
/// delivered.
///
/// Time comes from `now`, injected so that tests can step a clock across the 3 s dead-node
/// threshold.
public actor CoordinatorState {
    public let store: CoordinatorStore
    public private(set) var configuration: CoordinatorConfiguration
    let now: @Sendable () -> Date
    let logger: Logger

    /// Viewers of each stream, per relay node, as their last heartbeats said.
    var viewers: [StreamKey: [String: Int]] = [:]
    /// Kicks waiting for their ingest's next heartbeat.
    var pendingKicks: [String: Set<StreamKey>] = [:]
    /// Key revocations an ingest could not be told at once, for its next heartbeat; at most
    /// `maxPendingRevocations` streams per node.
    var pendingRevocations: [String: Set<StreamKey>] = [:]
    static let maxPendingRevocations = 4096
    /// Nodes found stale when the state was loaded: dead, but their streams and jobs are
    /// left alone until `reconcileDeadline`, giving them time to heartbeat again (they
    /// kept running while the coordinator was down).
    var awaitingReconciliation: Set<String> = []
    let reconcileDeadline: Date
    /// Reaches nodes between heartbeats (job pushes, kicks); nil leaves everything to
    /// heartbeat replies.
    var dispatch: NodeDispatch?
    /// Streams whose jobs are to be pushed, in order, to one consumer (`setDispatch`).
    var pushes: AsyncStream<[StreamKey]>.Continuation?
    /// Refused keys not yet told by an event: at most one `key.refused` event per stream a
    /// minute, whatever rate strangers present made-up keys at.
    var refusedKeys = RefusedKeyAudit()
    /// Ingests' claims to admit a publisher of a stream (`PublishClaims`): the cluster's
    /// one-publisher rule as a lock.
    var publishClaims = PublishClaims()
    /// When `run()` prunes history next (nil: at its first sweep).
    var nextPruneAt: Date?
    /// Nodes' leases from their beacons, and how to probe a suspect (`setLiveness`); nil
    /// leaves liveness to heartbeats alone (`deadAfter`).
    var liveness: Liveness?

    /// The beacon side of liveness: the lease table the bus fills, and a probe that says
    /// whether a node's connection is gone (true) or it merely did not answer (false).
    /// Nodes whose lease ended, as the lease table judged it (`judgeLeases`).
    struct Departures: Sendable, Equatable {
        /// Lost their lease, or a probe found their connection gone.
        var gone: Set<String> = []
        /// Said they leave.
        var left: Set<String> = []
        var isEmpty: Bool { gone.isEmpty && left.isEmpty }
    }

    public struct Liveness: Sendable {
        public let leases: LeaseTable
        public let probe: @Sendable (String) async -> Bool

        public init(leases: LeaseTable, probe: @escaping @Sendable (String) async -> Bool) {
            self.leases = leases
            self.probe = probe
        }
    }

    /// `app/name` as a dictionary key.
    struct StreamKey: Hashable, Sendable, Comparable, CustomStringConvertible {
        var app: String
        var name: String

        var description: String { "\(app)/\(name)" }

        static func < (left: StreamKey, right: StreamKey) -> Bool {
            (left.app, left.name) < (right.app, right.name)
        }
    }

    /// Loads the state from `store`. Nodes whose last heartbeat is older than `deadAfter`
    /// are marked dead now; they are reconciled when they heartbeat again, and handled as
    /// deaths (streams ended, jobs moved) if they have not within `deadAfter`.
    public static func load(
        store: CoordinatorStore,
        configuration: CoordinatorConfiguration = CoordinatorConfiguration(),
        now: @escaping @Sendable () -> Date = { Date() },
        logger: Logger = Logger(label: "estuary.coordinator")
    ) async throws -> CoordinatorState {
        let start = now()
        let cutoff = start.addingTimeInterval(-configuration.deadAfter.timeInterval)
        let stale = try await store.write { db in
            let alive = try NodeRecord.all().alive().fetchAll(db)
            var stale: [String] = []
            for var node in alive where node.lastHeartbeatAt < cutoff {
                node.state = .dead
                try node.update(db)
                try EventRecord.record(db, time: start, kind: "node.dead", subject: node.id, detail: "stale at coordinator start")
                stale.append(node.id)
            }
            try EventRecord.record(db, time: start, kind: "coordinator.started", subject: "coordinator", detail: "\(alive.count - stale.count) alive, \(stale.count) stale nodes")
            return stale
        }
        let state = CoordinatorState(store: store, configuration: configuration, now: now, logger: logger, start: start)
        await state.awaitReconciliation(of: stale)
        return state
    }

    private init(store: CoordinatorStore, configuration: CoordinatorConfiguration, now: @escaping @Sendable () -> Date, logger: Logger, start: Date) {
        self.store = store
        self.configuration = configuration
        self.now = now
        self.logger = logger
        self.reconcileDeadline = start.addingTimeInterval(configuration.deadAfter.timeInterval)
    }

    private func awaitReconciliation(of nodes: [String]) {
        awaitingReconciliation = Set(nodes)
    }

    /// Lets the state push jobs and kicks to nodes as they happen (`NodeDispatch`), rather
    /// than only in heartbeat replies. Set by the node that hosts the coordinator.
    public func setDispatch(_ dispatch: NodeDispatch?) {
        self.dispatch = dispatch
        pushes?.finish()
        pushes = nil
        guard let dispatch else { return }
        let (stream, continuation) = AsyncStream.makeStream(of: [StreamKey].self)
        pushes = continuation
        let store = store
        let logger = logger
        // One consumer, so pushes go out in the order their changes were committed, each
        // reading the placement just before its call: a job that moved twice is never
        // started on the node it left.
        Task {
            for await streams in stream {
                await Self.push(streams, store: store, dispatch: dispatch, logger: logger)
            }
        }
    }

    deinit {
        pushes?.finish()
    }

    /// Judges nodes' leases from their beacons (`setLiveness`) from now on.
    public func setLiveness(_ liveness: Liveness?) {
        self.liveness = liveness
    }

    /// Sweeps for dead nodes every `sweepInterval` until cancelled, logging moved jobs,
    /// and prunes history every `retention.interval` (`pruneHistoryIfDue`). With beacons,
    /// leases are judged every `livenessInterval` in between, and a sweep runs at once when
    /// one runs out. A failed sweep (a locked file) is logged and retried at the next tick.
    public func run() async {
        let tick = liveness == nil ? configuration.sweepInterval : min(configuration.livenessInterval, configuration.sweepInterval)
        var sinceSweep = Duration.zero
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: tick)
                sinceSweep += tick
                let departures = await judgeLeases()
                guard !departures.isEmpty || sinceSweep >= configuration.sweepInterval else { continue }
                sinceSweep = .zero
                let moves = try await sweep(gone: departures.gone, left: departures.left)
                for move in moves {
                    logger.info("Transcode job moved: \(move)")
                }
            } catch is CancellationError {
                return
            } catch {
                logger.warning("Coordinator sweep failed: \(error)")
            }
            await pruneHistoryIfDue()
        }
    }

    func reply(_ instructions: [NodeInstruction]) -> HeartbeatReply {
        HeartbeatReply(instructions: instructions, heartbeatInterval: configuration.heartbeatInterval, deadAfter: configuration.deadAfter)
    }
}

extension Duration {
    /// Seconds as a `TimeInterval`, for date arithmetic.
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}

extension CoordinatorState {
    /// The ladders of streams that start from now on (a configuration reload); jobs already
    /// placed keep their rungs.
    public func setLadders(_ ladders: [String: [RungSpec]]) {
        configuration.ladders = ladders
    }
}
