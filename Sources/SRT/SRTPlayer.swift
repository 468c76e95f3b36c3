import CSRT
import Foundation
import Logging
import Media
import Metrics
import NIOCore
import Session
import Synchronization

/// One SRT caller that watches (`m=request`, `read:`, a plain `app/name`), on its own
/// thread: the admission is asked as for any viewer, with the stream id's key or token as
/// the query, and the stream's shared MPEG-TS (`TSFeed`) is sent to it in 1316-byte
/// messages (seven TS packets, what SRT encoders and players use) until it leaves, the
/// stream ends, a send stalls past the write timeout, or it is kicked.
final class SRTPlayer: Sendable {
    let socket: SRTSOCKET
    let remoteAddress: String
    let listener: SRTListener
    private let endedBy = Mutex<SessionEndReason?>(nil)

    static let refused = Counter(label: "estuary_srt_connections_total", dimensions: [("result", "play_refused")])
    /// Seven 188-byte TS packets: SRT's default live payload size.
    static let messageBytes = 1316

    init(socket: SRTSOCKET, remoteAddress: String, listener: SRTListener) {
        self.socket = socket
        self.remoteAddress = remoteAddress
        self.listener = listener
    }

    private var logger: Logger { listener.logger }

    func run(_ streamID: SRTStreamID) {
        guard let requested = RequestedRendition(app: streamID.path.app, name: streamID.path.name) else { return }
        let socket = socket
        let traffic = SessionTraffic()
        let request = PlayRequest(
            path: requested, query: StreamQuery(streamID.query), remoteAddress: remoteAddress, transport: .srt,
            traffic: traffic,
            kick: { [self] reason in
                endedBy.withLock { $0 = $0 ?? .kicked(reason) }
                srt_close(socket)
            }
        )
        let admission = listener.admission
        guard let session = listener.admit("play of \(streamID.path)", from: remoteAddress, refused: Self.refused, endLate: { $0.end(.lateDecision) }, {
            await admission.play(request).result
        }) else { return }
        guard let feed = listener.feeds.acquire(session.hub) else {
            session.end(.streamEnded)
            return
        }
        defer { listener.feeds.release(feed) }
        session.begin()
        logger.info("SRT player \(remoteAddress) watches \(session.path)")
        let reason = play(feed, traffic: traffic)
        session.end(endedBy.withLock { $0 } ?? reason)
    }

    /// Sends the feed's chunks until the end; why it ended.
    private func play(_ feed: TSFeed, traffic: SessionTraffic) -> SessionEndReason {
        // A send that cannot complete this long (the caller's window is full and stays so)
        // ends the player: a viewer never holds the stream back, and libsrt's live mode
        // already drops what is too late to play.
        _ = csrt_set_int(socket, SRTO_SNDTIMEO, Int32(listener.configuration.writeTimeout.milliseconds))
        let statistics = SRTStatistics(direction: .sending, traffic: traffic, stream: nil)
        var next: Int?
        while true {
            if let ended = endedBy.withLock({ $0 }) { return ended }
            statistics.sampleIfDue(socket)
            switch feed.ring.read(from: next, until: Date().addingTimeInterval(1)) {
            case .ended:
                return .streamEnded
            case .timedOut:
                // Nothing to send for a second (a publisher that paused): is the caller there?
                let state = srt_getsockstate(socket)
                if state != SRTS_CONNECTED { return .left }
            case .chunks(let chunks, let after):
                next = after
                for chunk in chunks {
                    if let failure = send(chunk.bytes.readableBytesView, traffic: traffic) { return failure }
                }
            }
        }
    }

    /// Sends `bytes` in SRT messages; why the player ends, or nil.
    private func send(_ bytes: ByteBufferView, traffic: SessionTraffic) -> SessionEndReason? {
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let end = bytes.index(index, offsetBy: min(Self.messageBytes, bytes.endIndex - index))
            let sent = bytes[index..<end].withContiguousStorageIfAvailable { slice in
                srt_sendmsg2(socket, slice.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }, Int32(slice.count), nil)
            } ?? -1
            guard sent >= 0 else {
                let code = srt_getlasterror(nil)
                if code == Int32(SRT_EASYNCSND.rawValue) || code == Int32(SRT_ETIMEOUT.rawValue) {
                    return .timedOut("the SRT caller took nothing for \(listener.configuration.writeTimeout)")
                }
                return .left
            }
            traffic.sent(Int(sent))
            index = end
        }
        return nil
    }
}
