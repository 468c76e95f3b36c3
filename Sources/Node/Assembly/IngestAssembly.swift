import Cluster
import Coordinator
import Edge
import Hummingbird
import Logging
import Ingest
import Media
import Session

/// `ingest`: its side of the node's admission (one publisher per stream, stream keys when
/// required), the `IngestNode` actor (kicks, revocations, reports), and the observers that
/// put every accepted stream on the bus and announce it to the coordinator.
struct IngestAssembly {
    let admission: PublishAdmission
    let keys: StreamKeyVerifier
    let node: IngestNode
    let observers: [any SessionObserver]
    /// Push-forwarding of this node's streams (`forwards`), nil when none is configured.
    let forwards: StreamForwards
    /// The publications on a cluster's bus, for the cluster's one-publisher rule
    /// (`ClusterPublisherPolicy`); nil on a node alone.
    let clusterPublications: BusPublications?
    /// The cluster's one-publisher lock, claimed at the coordinator; nil on a node alone.
    let clusterClaim: (@Sendable (StreamPath, _ handedOver: Bool) async -> Bool?)?

    init(_ context: NodeContext) throws {
        let registry = context.registry
        let logger = context.logger
        admission = PublishAdmission(registry: registry, logger: logger)
        let coordinator = context.coordinator
        // Asked only while `requireStreamKeys` is set (a reload may set it); made either way.
        let keys = StreamKeyVerifier(logger: logger) { path, key in
            try await NodeActorSystem.$callTimeout.withValue(.seconds(1)) {
                try await coordinator.verifyStreamKey(app: path.app, name: path.name, key: key)
            }
        }
        self.keys = keys
        let reporter = IngestReporter()
        let published = PublishedHubs()
        let system = context.system
        node = try system.makeActor(named: RoleAddress.ingest) {
            IngestNode(registry: registry, reporter: reporter, published: published, keys: keys, sessions: context.sessions, logger: logger, actorSystem: system)
        }
        // Made with or without targets: a reload may add some (`StreamForwards.setTargets`).
        let forwards = StreamForwards(targets: context.configuration.forwards, logger: logger)
        self.forwards = forwards
        context.live.subscribe { new, _ in
            await forwards.setTargets(new.forwards)
        }
        // A draining node's publishers were asked to reconnect elsewhere: they yield to
        // their reconnections on other ingests.
        let drain = context.drain
        let publications = BusPublications(bus: context.bus, logger: logger, yielding: { drain.isDraining })
        clusterPublications = context.nats != nil ? publications : nil
        let nodeID = context.configuration.nodeID
        let claimLogger = logger
        let coordinatorStatus = context.coordinatorStatus
        let claim: @Sendable (StreamPath, Bool) async -> Bool? = { path, handedOver in
            // A coordinator that has not answered the heartbeats of the last 3 s is not
            // asked: the publisher would only wait out the timeout before the bus rule
            // alone let it through.
            guard coordinatorStatus.answeredRecently() else { return nil }
            do {
                return try await NodeActorSystem.$callTimeout.withValue(ClusterPublisherPolicy.claimTimeout) {
                    try await coordinator.claimPublication(app: path.app, name: path.name, node: nodeID, handedOver: handedOver)
                }
            } catch {
                claimLogger.info("the coordinator did not answer a publish claim; the bus rule alone decides", metadata: ["stream": "\(path)", "error": "\(error)"])
                return nil
            }
        }
        clusterClaim = context.nats != nil ? claim : nil
        observers = [
            // Tracks go on the bus only where other nodes may read them: on a node alone,
            // its relay serves them from their hubs, and the bus would only cost encoding.
            BusPublishing(publications: publications, published: published, clustered: context.nats != nil),
            CoordinatorAnnouncement(coordinator: coordinator, nodeID: context.configuration.nodeID, logger: logger),
            Forwarding(forwards: forwards),
        ]
    }
}
