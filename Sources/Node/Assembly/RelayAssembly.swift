import Cluster
import Logging
import Media
import Relay
import Session

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
        let openRemote = context.remote.map { _ in
            Self.openRemoteRenditions(
                registry: registry, hls: hls,
                rungs: RungDirectory(
                    // An edge outside a cluster has no coordinator to ask.
                    coordinator: context.roles.contains(.edge) && context.nats == nil ? nil : context.coordinator,
                    ladders: context.live.ladders
                )
            )
        }
        routes = HLSRoutes(service: hls, onRequest: openRemote, sessions: hlsSessions)
    }

    /// HLS asks for a stream by its source path. Opens the source and its rungs (as the
    /// coordinator's lookup names them) from the bus, and segments each as a rendition.
    private static func openRemoteRenditions(
        registry: StreamRegistry, hls: HLSService, rungs: RungDirectory
    ) -> @Sendable (StreamPath) async -> Void {
        let absent = NegativeCache()
        return { path in
            var candidates = [RenditionPath.source(path)]
            for rung in await rungs.names(of: path) {
                if let rungPath = try? RenditionPath(stream: path, rendition: rung) {
                    candidates.append(rungPath)
                }
            }
            // Together: a cold request waits for the slowest lookup, not for their sum.
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
    }
}
