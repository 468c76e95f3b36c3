import Cluster
import Distributed
import Ingest
import Logging
import Media
import Metrics
import Synchronization

/// The ingest role as a distributed actor (`IngestNodeAPI`, named `RoleAddress.ingest`):
/// the coordinator calls it to kick a publisher now, and the node's heartbeat asks it what
/// it publishes. The publishers themselves live in the RTMP server and the shared stream
/// registry; this actor only answers for them.
distributed actor IngestNode: IngestNodeAPI {
    typealias ActorSystem = NodeActorSystem

    private let registry: StreamRegistry
    private let reporter: IngestReporter
    private let published: PublishedHubs
    /// nil when publishing needs no stream key.
    private let keys: StreamKeyVerifier?
    /// Kicks tell the publisher why, through its session (`SessionTable.kickPublisher`).
    private let sessions: SessionTable?
    private let logger: Logger

    init(
        registry: StreamRegistry,
        reporter: IngestReporter,
        published: PublishedHubs,
        keys: StreamKeyVerifier?,
        sessions: SessionTable? = nil,
        logger: Logger,
        actorSystem: NodeActorSystem
    ) {
        self.sessions = sessions
        self.registry = registry
        self.reporter = reporter
        self.published = published
        self.keys = keys
        self.logger = logger
        self.actorSystem = actorSystem
    }

    distributed func kick(app: String, name: String) async -> Bool {
        guard let path = try? StreamPath(app: app, name: name),
              let hub = await registry.hub(for: path), published.contains(hub)
        else { return false }
        // Through its session, so that the publisher is told why; else closed.
        guard sessions?.kickPublisher(of: path, reason: "kicked through the coordinator's admin API") == true || hub.evictPublisher() else { return false }
        logger.notice("publisher kicked by the coordinator", metadata: ["stream": "\(path)"])
        return true
    }

    /// The coordinator revoked a key of `app/name`: cached acceptances go, so the key is
    /// refused from the next publish on, and a publisher that came with a key the
    /// coordinator now refuses is disconnected. A key it still accepts (the stream has
    /// several) keeps its publisher; so does one it cannot be asked about right now.
    distributed func keyRevoked(app: String, name: String) async -> Bool {
        guard let keys, let path = try? StreamPath(app: app, name: name) else { return false }
        let forgotten = keys.forget(path)
        logger.notice("stream key revoked by the coordinator", metadata: ["stream": "\(path)", "cached": "\(forgotten)"])
        guard let hub = await registry.hub(for: path), published.contains(hub),
              let owner = hub.owner, let key = PublishAdmission.key(ofOwner: owner)
        else { return false }
        guard await keys.isStillValid(path, key: key) == false, hub.evictPublisher(ownedBy: owner) else { return false }
        logger.notice("publisher disconnected: its stream key was revoked", metadata: ["stream": "\(path)"])
        IngestNodeMetrics.revokedPublishers.increment()
        return true
    }

    /// Only streams of this node's RTMP publishers: the registry also holds the rungs a
    /// transcoder of the same process publishes, and mirrors of other nodes' streams, and
    /// reporting those as published here would have the coordinator transcode its own rungs.
    distributed func streams() async -> [StreamReport] {
        await reporter.report(published.live(), tracks: published.liveTracks())
    }
}

/// The hubs this node's RTMP publishers feed (admitted by `PublishAdmission`), as opposed
/// to every hub with a publisher in the registry.
final class PublishedHubs: Sendable {
    private let hubs = Mutex<[ObjectIdentifier: StreamHub]>([:])
    /// The renditions multitrack publishers' encoders make (`app/name/trackN`), on the bus
    /// beside their streams and reported with them; not streams of their own.
    private let tracks = Mutex<[ObjectIdentifier: StreamHub]>([:])

    func insert(_ hub: StreamHub) {
        hubs.withLock { $0[ObjectIdentifier(hub)] = hub }
    }

    func insertTrack(_ hub: StreamHub) {
        tracks.withLock { $0[ObjectIdentifier(hub)] = hub }
    }

    /// The tracks that have not ended, forgetting the others.
    func liveTracks() -> [StreamHub] {
        Self.live(in: tracks)
    }

    func contains(_ hub: StreamHub) -> Bool {
        hubs.withLock { $0[ObjectIdentifier(hub)] != nil }
    }

    /// The ones that have not ended (a publisher may be reconnecting to them); ended hubs
    /// are forgotten.
    func live() -> [StreamHub] {
        Self.live(in: hubs)
    }

    private static func live(in table: borrowing Mutex<[ObjectIdentifier: StreamHub]>) -> [StreamHub] {
        table.withLock { hubs in
            hubs = hubs.filter { !$0.value.isEnded }
            return Array(hubs.values)
        }
    }
}

enum IngestNodeMetrics {
    /// Publishers disconnected because the key they came with was revoked.
    static let revokedPublishers = Counter(label: "estuary_ingest_revoked_publishers_total")
}
