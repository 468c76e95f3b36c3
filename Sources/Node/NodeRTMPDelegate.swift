import Ingest
import Logging
import Media
import RTMP
import Relay

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
    var accepted: @Sendable (StreamHub) async -> Void = { _ in }

    func publish(_ request: RTMPPublishRequest) async -> RTMPPublishDecision {
        guard let admission else {
            return .reject(code: "NetStream.Publish.BadName", description: "this node is a relay: publish to an ingest node")
        }
        if let keys {
            let decision = await keys.check(request.path, key: StreamKeyVerifier.key(fromQuery: request.query))
            if case .refused(let why) = decision {
                logger.notice("publish refused", metadata: ["stream": "\(request.path)", "from": "\(request.remoteAddress)", "reason": "\(why)"])
                return .reject(code: "NetStream.Publish.Denied", description: why)
            }
        }
        let decision = await admission.publish(request)
        if case .accept(let hub, _) = decision {
            await accepted(hub)
        }
        return decision
    }

    func unpublished(_ path: StreamPath, id: StreamHub.PublisherID) async {
        await admission?.unpublished(path, id: id)
    }

    func play(_ request: RTMPPlayRequest) async -> RTMPPlayDecision {
        await playback.play(request)
    }
}
