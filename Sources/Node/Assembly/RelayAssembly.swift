import Cluster
import Logging
import Media
import RTMP
import Relay
import NIOCore
import Session
import Synchronization

/// `relay`: HLS for every stream it plays (segmented from the first frame for streams
/// published in this process, opened from the bus on a viewer's request otherwise), the
/// `RelayNode` actor that reports viewers, and its side of the node's admission: playback.
struct RelayAssembly {
    let hls: HLSService
    let routes: HLSRoutes
    /// HLS players as sessions; the node's admission is set on it once it exists.
    let hlsSessions: HLSSessions
    let playback: Playback
    let node: RelayNode
    /// Observers of this process's sessions that the relay needs.
    let observers: [any SessionObserver]

    init(_ context: NodeContext) throws {
        let hls = HLSService(configuration: context.configuration.hls, group: context.group, logger: context.logger)
        self.hls = hls
        let registry = context.registry
        let system = context.system
        // A player that has not asked for three target durations has left.
        // One host's sessions are held to the HTTP listener's per-address cap, as its
        // connections are (an HLS player holds none).
        let hlsSessions = HLSSessions(
            idleLimit: context.configuration.hls.targetSegmentDuration * 3,
            limits: context.configuration.httpConnectionLimits, logger: context.logger
        )
        context.live.subscribe { new, _ in hlsSessions.setLimits(new.httpConnectionLimits) }
        self.hlsSessions = hlsSessions
        node = try system.makeActor(named: RoleAddress.relay) { RelayNode(registry: registry, hlsSessions: hlsSessions, actorSystem: system) }
        playback = Playback(registry: registry, logger: context.logger, codecWait: context.configuration.playCodecWait)
        // Streams published in this process (and the rungs its transcoder publishes) are
        // segmented from their first frame.
        observers = [HLSSegmenting(hls: hls)]
        // An edge outside a cluster has no coordinator to ask.
        let alone = context.roles.contains(.edge) && context.nats == nil
        let openRemote = context.remote.map { _ in
            Self.openRemoteRenditions(
                registry: registry, hls: hls,
                rungs: RungDirectory(coordinator: alone ? nil : context.coordinator, ladders: context.live.ladders),
                tracksFromMetadata: alone
            )
        }
        routes = HLSRoutes(service: hls, onRequest: openRemote, sessions: hlsSessions)
    }

    /// HLS asks for a stream by its source path. Opens the source and its rungs (as the
    /// coordinator's lookup names them) from the bus, and segments each as a rendition.
    /// An edge outside a cluster (`tracksFromMetadata`) learns a multitrack stream's other
    /// tracks from the source's metadata (`TrackIdInfoMaps`, which the origin writes) and
    /// opens them too.
    private static func openRemoteRenditions(
        registry: StreamRegistry, hls: HLSService, rungs: RungDirectory, tracksFromMetadata: Bool
    ) -> @Sendable (StreamPath) async -> Void {
        let absent = NegativeCache()
        let readings = MetadataReadings()
        // Together: a cold request waits for the slowest lookup, not for their sum.
        let open: @Sendable ([RenditionPath]) async -> Void = { candidates in
            await withTaskGroup(of: Void.self) { group in
                for candidate in candidates where !absent.contains(candidate) {
                    group.addTask {
                        guard let hub = await registry.resolve(candidate) else {
                            absent.insert(candidate)
                            return
                        }
                        await hls.attach(hub)
                    }
                }
            }
        }
        return { path in
            var candidates = [RenditionPath.source(path)]
            for rung in await rungs.names(of: path) {
                if let rungPath = try? RenditionPath(stream: path, rendition: rung) {
                    candidates.append(rungPath)
                }
            }
            await open(candidates)
            guard tracksFromMetadata, let source = await registry.hub(for: .source(path)) else { return }
            let tracks = await Self.announcedTracks(of: source, readings: readings).compactMap { try? RenditionPath(stream: path, rendition: $0) }
            await open(tracks.filter { !candidates.contains($0) })
        }
    }

    /// The tracks a pulled stream's metadata lists (`track1`, `audio1`, …). Its upstream sends
    /// the metadata first, so a stream just opened is waited for, until its metadata or its
    /// first configuration record comes (then it has none), 1 s at most.
    static func announcedTracks(of hub: StreamHub, readings: MetadataReadings) async -> [String] {
        let deadline = ContinuousClock.now + .seconds(1)
        while true {
            let records = hub.configurationRecords
            if let metadata = records.metadata { return readings.renditions(of: hub, metadata.payload) }
            if records.video != nil || records.audio != nil || ContinuousClock.now >= deadline || hub.isEnded { return [] }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }
}

/// The tracks each pulled stream's metadata lists, read once per metadata: every HLS
/// request of an edge asks (a player's parts come several times a second), and the
/// metadata rarely changes. A reading is known by the metadata's hub, size and hash (the
/// metadata itself, up to `maxMetadataBytes`, is not kept). Bounded: at most `capacity`
/// readings, the table emptied when full (a reading costs one metadata decode).
final class MetadataReadings: Sendable {
    private struct Reading {
        var hub: ObjectIdentifier
        var size: Int
        var hash: Int
        var renditions: [String]
    }

    private let readings = Mutex<[RenditionPath: Reading]>([:])
    static let capacity = 1024

    func renditions(of hub: StreamHub, _ metadata: ByteBuffer) -> [String] {
        let hash = metadata.withUnsafeReadableBytes { bytes in
            var hasher = Hasher()
            hasher.combine(bytes: bytes)
            return hasher.finalize()
        }
        let identity = ObjectIdentifier(hub)
        if let known = readings.withLock({ $0[hub.path] }), known.hub == identity, known.size == metadata.readableBytes, known.hash == hash {
            return known.renditions
        }
        let renditions = TrackIdInfoMaps.renditions(inMetadataBody: metadata)
        readings.withLock { readings in
            if readings.count >= Self.capacity, readings[hub.path] == nil { readings.removeAll(keepingCapacity: true) }
            readings[hub.path] = Reading(hub: identity, size: metadata.readableBytes, hash: hash, renditions: renditions)
        }
        return renditions
    }
}
