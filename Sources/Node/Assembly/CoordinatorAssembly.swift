import Cluster
import Coordinator
import Logging
import NIOCore
import Transcode
import ServiceLifecycle

/// `coordinator`: the `Coordinator` actor on its SQLite store, its sweep for dead nodes,
/// and the admin API on the node's router. Built first: the other roles of the process call
/// it as they start.
struct CoordinatorAssembly {
    let store: CoordinatorStore
    /// Its state, which a configuration reload gives new ladders.
    let state: CoordinatorState
    /// Kept alive for the node's lifetime: the actor system holds actors weakly.
    let actor: Coordinator
    let services: [ServiceGroupConfiguration.ServiceConfiguration]
    /// Every node's beacons, into the lease table (kept for the node's lifetime).
    let beacons: BusSubscription?
    /// Nodes' word that they leave, into the lease table, answered once recorded.
    let leaves: BusSubscription?

    init(_ context: NodeContext) async throws {
        let configuration = context.configuration
        let store = try await CoordinatorStore.open(at: configuration.databasePath)
        self.store = store
        var coordinatorConfiguration = CoordinatorConfiguration(ladders: Self.rungSpecs(configuration.ladders))
        coordinatorConfiguration.localNodeID = configuration.nodeID
        let state = try await CoordinatorState.load(store: store, configuration: coordinatorConfiguration, logger: context.logger)
        self.state = state
        await state.setDispatch(NodeDispatch(system: context.system))
        // Liveness from beacons: recorded on the bus's delivery thread, judged by the sweep.
        let leases = LeaseTable()
        let bus = context.bus
        beacons = try? bus.subscribe(subject: LivenessSubject.allBeacons) { message in
            if let nodeID = LivenessSubject.nodeID(ofBeacon: message.subject) { leases.beat(nodeID) }
        }
        // Without beacons nobody is judged by the lease table: a leave is not taken (not
        // answered), and the node is found gone by its silence.
        leaves = beacons == nil ? nil : try? bus.subscribe(subject: LivenessSubject.allLeaves) { message in
            guard let nodeID = LivenessSubject.nodeID(ofLeave: message.subject) else { return }
            leases.leave(nodeID)
            try? bus.respond(to: message, payload: ByteBuffer())
        }
        if beacons != nil {
            await state.setLiveness(CoordinatorState.Liveness(leases: leases) { nodeID in
                // The server answers "no responders" when the node's connection is gone.
                do throws(BusError) {
                    _ = try await bus.request(subject: LivenessSubject.probe(nodeID), payload: ByteBuffer(), timeout: .milliseconds(300))
                    return false
                } catch {
                    if case .noResponders = error { return true }
                    return false
                }
            })
        }
        let system = context.system
        actor = try system.makeActor(named: CoordinatorAddress.actorName) { Coordinator(state: state, actorSystem: system) }
        // Other nodes reach the actor once its subscription is on the server.
        try? await context.nats?.flush()
        // Without a token the API is closed: the middleware refuses every request, saying so.
        if configuration.adminToken == nil {
            context.logger.warning("no admin token configured (--admin-token or ESTUARY_ADMIN_TOKEN): the admin API refuses every request")
        }
        services = [.init(service: CoordinatorSweep(state: state))]
        context.logger.info("coordinator state in \(configuration.databasePath)")
    }

    func close() async {
        try? await store.close()
    }

    /// The coordinator's view of ladders: each rung's name, height and bit rate.
    static func rungSpecs(_ ladders: [String: Ladder]) -> [String: [RungSpec]] {
        ladders.mapValues { ladder in
            ladder.rungs.map { RungSpec(name: $0.name, width: 0, height: $0.height, bitRate: $0.videoBitRate) }
        }
    }
}
