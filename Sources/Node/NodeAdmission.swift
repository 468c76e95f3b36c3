import Ingest
import Logging
import Media
import Relay
import Session
import Transcode

/// The node's one admission path, for every protocol (RTMP publish and play, HTTP-FLV play;
/// SRT and edges next): publish through the ingest's admission (with a stream key check
/// where keys are required, and the node's capacities); play through the relay's playback.
/// A node without publish admission (a relay) refuses publishers. Every session's start and
/// end goes to the `observers`, in order (`SessionEvent`): that is how an accepted hub
/// reaches HLS, the bus and the coordinator, and where hooks and recording will attach.
struct NodeAdmission: SessionAdmission {
    let admission: PublishAdmission?
    let playback: Playback
    /// Set when publishing needs a stream key (`requireStreamKeys`).
    var keys: StreamKeyVerifier? = nil
    let logger: Logger
    /// Ladders by application: their publishes are counted against `transcodes`. A rung is
    /// addressed as `app/name/rung`, which no publish can name. A stream called `demo_480p`
    /// is a stream of its own, but its name is also the old address of the 480p rung of
    /// `demo` (`RequestedRendition`), which the stream would take over for old players: on
    /// an open ingest (no stream keys) such names stay refused in applications with a
    /// ladder; with keys, only the key's owner can publish it.
    var ladders: [String: Ladder] = [:]
    /// The most streams (hubs, with their GOP caches and segmenters) a node carries; a
    /// publish of a new stream over it is refused.
    var maxStreams: Int? = nil
    /// Streams this node accepts into applications with a ladder, at most `limit` at once.
    var transcodes = TranscodeSlots(limit: nil)
    /// While it runs, new sessions are refused (`NodeDrain`).
    var drain: NodeDrain? = nil
    /// Told of every session's start and end, in this order.
    var observers: [any SessionObserver] = []

    func publish(_ request: PublishRequest) async -> PublishDecision {
        guard let admission else {
            return .refuse(.badName("this node is a relay: publish to an ingest node"))
        }
        if drain?.isDraining == true {
            logger.notice("publish refused", metadata: ["stream": "\(request.path)", "from": "\(request.remoteAddress)", "reason": "the node is draining"])
            NodeMetrics.refusedPublishes(reason: "draining")
            return .refuse(.unavailable("this node is draining: publish to another node"))
        }
        let ladder = ladders[request.path.app]
        if keys == nil, let ladder, let rung = ladder.rungs.first(where: { request.path.name.hasSuffix("_\($0.name)") && request.path.name.count > $0.name.count + 1 }) {
            logger.notice("publish refused", metadata: ["stream": "\(request.path)", "from": "\(request.remoteAddress)", "reason": "the old address of a \(rung.name) rung, on an open ingest"])
            NodeMetrics.refusedPublishes(reason: "rendition_name")
            return .refuse(.badName("\(request.path.name) is the old address of a transcoded rung; publish it with a stream key"))
        }
        if let keys {
            let decision = await keys.check(request.path, key: request.query.streamKey)
            if case .refused(let why) = decision {
                logger.notice("publish refused", metadata: ["stream": "\(request.path)", "from": "\(request.remoteAddress)", "protocol": "\(request.transport)", "reason": "\(why)"])
                return .refuse(.denied(why))
            }
        }
        if let limit = maxStreams, await admission.registry.hub(for: request.path) == nil,
           await admission.registry.streams.count >= limit {
            logger.notice("publish refused", metadata: ["stream": "\(request.path)", "from": "\(request.remoteAddress)", "reason": "the node's \(limit) streams are live"])
            NodeMetrics.refusedPublishes(reason: "stream_capacity")
            return .refuse(.unavailable("this node carries at most \(limit) streams; try again later"))
        }
        if ladder != nil, !transcodes.reserve(request.path) {
            logger.notice("publish refused", metadata: ["stream": "\(request.path)", "from": "\(request.remoteAddress)", "reason": "transcoding capacity (\(transcodes.limit ?? 0) streams) reached"])
            NodeMetrics.refusedPublishes(reason: "transcode_capacity")
            return .refuse(.unavailable("this node transcodes at most \(transcodes.limit ?? 0) streams; try again later"))
        }
        let decision = await admission.publish(request)
        switch decision {
        case .accept(let hub, let id):
            if ladder != nil { transcodes.bind(request.path, to: id) }
            // A protocol that cannot tell its publisher why is kicked by closing it.
            let evict = request.evict
            let kick: SessionKick = request.kick ?? { _ in evict() }
            await notify(.publishStarted(PublishSession(
                path: request.path, hub: hub, id: id, transport: request.transport, remoteAddress: request.remoteAddress,
                requestReconnect: request.requestReconnect, query: request.query, traffic: request.traffic, kick: kick
            )))
        case .refuse:
            if ladder != nil { transcodes.cancel(request.path) }
        }
        return decision
    }

    func unpublished(_ session: PublishSession) async {
        transcodes.release(session.path, id: session.id)
        await admission?.unpublished(session.path, id: session.id)
        await notify(.publishEnded(session))
    }

    func play(_ request: PlayRequest) async -> PlayDecision {
        if drain?.isDraining == true {
            logger.notice("play refused", metadata: ["stream": "\(request.path)", "from": "\(request.remoteAddress)", "reason": "the node is draining"])
            NodeMetrics.refusedPlays(reason: "draining")
            return .refuse(.unavailable("this node is draining: play from another node"))
        }
        return await playback.play(request)
    }

    func playStarted(_ session: PlaySession) async {
        await notify(.playStarted(session))
    }

    func playEnded(_ session: PlaySession) async {
        await notify(.playEnded(session))
    }

    private func notify(_ event: SessionEvent) async {
        for observer in observers {
            await observer.observe(event)
        }
    }
}
