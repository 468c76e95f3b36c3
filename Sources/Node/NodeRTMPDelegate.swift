import Ingest
import Logging
import Media
import NIOConcurrencyHelpers
import RTMP
import Relay
import Transcode

/// The RTMP listener's policy for every role: publish through the ingest's admission (with
/// a stream key check where keys are required), then hand the accepted hub on (to HLS and
/// the transcoder in one process, to the bus on an ingest); play through the relay's
/// playback. A node without admission (a relay) refuses publishers.
struct NodeRTMPDelegate: RTMPServerDelegate {
    let admission: PublishAdmission?
    let playback: Playback
    /// Set when publishing needs a stream key (`requireStreamKeys`).
    var keys: StreamKeyVerifier? = nil
    let logger: Logger
    /// Ladders by application: their rendition names are not publishable, and their
    /// publishes are counted against `transcodes`.
    var ladders: [String: Ladder] = [:]
    /// The most streams (hubs, with their GOP caches and segmenters) a node carries; a
    /// publish of a new stream over it is refused.
    var maxStreams: Int? = nil
    /// Streams this node accepts into applications with a ladder, at most `limit` at once.
    var transcodes = TranscodeSlots(limit: nil)
    var accepted: @Sendable (StreamHub) async -> Void = { _ in }

    func publish(_ request: RTMPPublishRequest) async -> RTMPPublishDecision {
        guard let admission else {
            return .reject(code: "NetStream.Publish.BadName", description: "this node is a relay: publish to an ingest node")
        }
        let ladder = ladders[request.path.app]
        if let ladder, let rung = ladder.rungs.first(where: { request.path.name.hasSuffix("_\($0.name)") && request.path.name.count > $0.name.count + 1 }) {
            // `abr/demo_480p` is the 480p rendition of `abr/demo`: a publisher must not take its place.
            logger.notice("publish refused", metadata: ["stream": "\(request.path)", "from": "\(request.remoteAddress)", "reason": "the name of a \(rung.name) rendition"])
            NodeMetrics.refusedPublishes(reason: "rendition_name")
            return .reject(code: "NetStream.Publish.BadName", description: "\(request.path.name) is the name of a transcoded rendition")
        }
        if let keys {
            let decision = await keys.check(request.path, key: StreamKeyVerifier.key(fromQuery: request.query))
            if case .refused(let why) = decision {
                logger.notice("publish refused", metadata: ["stream": "\(request.path)", "from": "\(request.remoteAddress)", "reason": "\(why)"])
                return .reject(code: "NetStream.Publish.Denied", description: why)
            }
        }
        if let limit = maxStreams, await admission.registry.hub(for: request.path) == nil,
           await admission.registry.streams.count >= limit {
            logger.notice("publish refused", metadata: ["stream": "\(request.path)", "from": "\(request.remoteAddress)", "reason": "the node's \(limit) streams are live"])
            NodeMetrics.refusedPublishes(reason: "stream_capacity")
            return .reject(code: "NetStream.Publish.Denied", description: "this node carries at most \(limit) streams; try again later")
        }
        if ladder != nil, !transcodes.reserve(request.path) {
            logger.notice("publish refused", metadata: ["stream": "\(request.path)", "from": "\(request.remoteAddress)", "reason": "transcoding capacity (\(transcodes.limit ?? 0) streams) reached"])
            NodeMetrics.refusedPublishes(reason: "transcode_capacity")
            return .reject(code: "NetStream.Publish.Denied", description: "this node transcodes at most \(transcodes.limit ?? 0) streams; try again later")
        }
        let decision = await admission.publish(request)
        switch decision {
        case .accept(let hub, let id):
            if ladder != nil { transcodes.bind(request.path, to: id) }
            await accepted(hub)
        case .reject:
            if ladder != nil { transcodes.cancel(request.path) }
        }
        return decision
    }

    func unpublished(_ path: StreamPath, id: StreamHub.PublisherID) async {
        transcodes.release(path, id: id)
        await admission?.unpublished(path, id: id)
    }

    func play(_ request: RTMPPlayRequest) async -> RTMPPlayDecision {
        await playback.play(request)
    }
}

/// The streams a node accepts into applications with a ladder, bounded: each starts an x264
/// ladder, so anyone who can publish could otherwise start as many as they like. A stream
/// holds its slot from its publish until its publisher leaves; a publisher resuming its own
/// stream reuses the slot.
final class TranscodeSlots: Sendable {
    let limit: Int?
    private struct Slot {
        var publisher: StreamHub.PublisherID?
    }
    private let slots = NIOLockedValueBox<[StreamPath: Slot]>([:])

    init(limit: Int?) {
        self.limit = limit
    }

    /// Holds a slot for `path` (or finds it held already); false when every slot is taken.
    func reserve(_ path: StreamPath) -> Bool {
        slots.withLockedValue { slots in
            if slots[path] != nil { return true }
            if let limit, slots.count >= limit { return false }
            slots[path] = Slot()
            return true
        }
    }

    /// The publisher now holding `path`'s slot.
    func bind(_ path: StreamPath, to publisher: StreamHub.PublisherID) {
        slots.withLockedValue { $0[path] = Slot(publisher: publisher) }
    }

    /// Gives back a slot reserved for a publish that was refused.
    func cancel(_ path: StreamPath) {
        slots.withLockedValue { slots in
            if slots[path]?.publisher == nil { slots[path] = nil }
        }
    }

    /// Gives back `path`'s slot if `publisher` still holds it.
    func release(_ path: StreamPath, id publisher: StreamHub.PublisherID) {
        slots.withLockedValue { slots in
            if slots[path]?.publisher == publisher { slots[path] = nil }
        }
    }
}
