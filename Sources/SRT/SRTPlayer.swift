import CSRT
import Foundation
import Logging
import Media
import Metrics
import Session
import Synchronization

/// One SRT caller that watches (`m=request`, `read:`, a plain `app/name`): on the caller's
/// thread, the admission is asked as for any viewer, with the stream id's key or token as
/// the query; an admitted player is then handed to its stream's `TSSender`, which sends it
/// the stream's shared MPEG-TS until it leaves, the stream ends, its send buffer stays full
/// past the write timeout, or it is kicked.
final class SRTPlayer: Sendable {
    let socket: SRTSOCKET
    let remoteAddress: String
    let listener: SRTListener

    static let refused = Counter(label: "estuary_srt_connections_total", dimensions: [("result", "play_refused")])

    init(socket: SRTSOCKET, remoteAddress: String, listener: SRTListener) {
        self.socket = socket
        self.remoteAddress = remoteAddress
        self.listener = listener
    }

    private var logger: Logger { listener.logger }

    /// Admits the player and hands it to its stream's sender; `done` (which closes the
    /// socket) is called once the player has ended, here or on the sender's thread.
    func run(_ streamID: SRTStreamID, done: @escaping @Sendable () -> Void) {
        guard let requested = RequestedRendition(app: streamID.path.app, name: streamID.path.name) else { return done() }
        let socket = socket
        let traffic = SessionTraffic()
        let ended = Mutex<(SessionEndReason?, TSSender.Attachment?)>((nil, nil))
        let request = PlayRequest(
            path: requested, query: StreamQuery(streamID.query), remoteAddress: remoteAddress, transport: .srt,
            traffic: traffic,
            kick: { reason in
                // Before the hand-over the reason waits here; after it, on the attachment.
                let attachment = ended.withLock { ended -> TSSender.Attachment? in
                    ended.0 = ended.0 ?? .kicked(reason)
                    return ended.1
                }
                attachment?.end(.kicked(reason))
                // The sender sees the closed socket at its next send, or within a second.
                SRTListener.closeSoon(socket)
            }
        )
        let admission = listener.admission
        guard let session = listener.admit("play of \(streamID.path)", from: remoteAddress, streamID: streamID, refused: Self.refused, endLate: { $0.end(.lateDecision) }, {
            await admission.play(request).result
        }) else { return done() }
        let feeds = listener.feeds
        guard let feed = feeds.acquire(session.hub) else {
            session.end(.streamEnded)
            return done()
        }
        session.begin()
        logger.info("SRT player \(remoteAddress) watches \(session.path)")
        let attachment = TSSender.Attachment(socket: socket, traffic: traffic) { reason in
            // The kick no longer needs the attachment (which holds the session).
            ended.withLock { $0.1 = nil }
            session.end(reason)
            feeds.release(feed)
            done()
        }
        if let kicked = ended.withLock({ ended -> SessionEndReason? in
            ended.1 = attachment
            return ended.0
        }) {
            attachment.end(kicked)
        }
        feed.sender.attach(attachment)
    }
}
