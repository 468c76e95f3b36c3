import CSRT
import Foundation
import LibAV
import Logging
import Media
import Metrics
import Session
import Synchronization

/// One SRT caller that publishes, on its own thread: its stream id is read, the admission
/// asked (as for an RTMP publisher, with the stream id's key or token as the query), and its
/// MPEG-TS demuxed (`TSDemuxer`) into the stream's hub until it leaves, falls silent for the
/// idle timeout, or is kicked.
final class SRTPublisher: Sendable {
    let socket: SRTSOCKET
    let remoteAddress: String
    let listener: SRTListener
    /// Why the session was ended from elsewhere (a kick, a takeover); nil while it runs.
    private let endedBy = Mutex<SessionEndReason?>(nil)

    static let refused = Counter(label: "estuary_srt_connections_total", dimensions: [("result", "refused")])

    init(socket: SRTSOCKET, remoteAddress: String, listener: SRTListener) {
        self.socket = socket
        self.remoteAddress = remoteAddress
        self.listener = listener
    }

    private var logger: Logger { listener.logger }

    func run(_ streamID: SRTStreamID) {
        _ = csrt_set_int(socket, SRTO_RCVTIMEO, Int32(listener.configuration.idleTimeout.milliseconds))
        let socket = socket
        let traffic = SessionTraffic()
        let request = PublishRequest(
            path: streamID.path, query: StreamQuery(streamID.query), remoteAddress: remoteAddress, transport: .srt,
            evict: { [self] in
                endedBy.withLock { $0 = $0 ?? .takenOver }
                SRTListener.closeSoon(socket)
            },
            traffic: traffic,
            kick: { [self] reason in
                endedBy.withLock { $0 = $0 ?? .kicked(reason) }
                SRTListener.closeSoon(socket)
            }
        )
        let admission = listener.admission
        guard let session = listener.admit("publish of \(streamID.path)", from: remoteAddress, streamID: streamID, refused: Self.refused, endLate: { $0.end(.lateDecision) }, {
            await admission.publish(request).result
        }) else { return }
        let reason = publish(into: session, traffic: traffic)
        session.end(endedBy.withLock { $0 } ?? reason)
    }

    /// Demuxes the caller's TS into the hub until the end; why it ended.
    private func publish(into session: PublishSession, traffic: SessionTraffic) -> SessionEndReason {
        let reader = SRTMessageReader(socket: socket)
        let demuxer: TSDemuxer
        do {
            demuxer = try TSDemuxer { buffer in
                let count = reader.read(into: buffer)
                if count > 0 { traffic.received(count) }
                return count
            }
        } catch {
            if reader.timedOut { return .timedOut("no MPEG-TS within the idle timeout") }
            return reader.ended ? .left : .failed("the stream is not MPEG-TS that libavformat reads: \(error)")
        }
        let hub = session.hub
        logger.info("SRT publisher \(remoteAddress) is live on \(session.path)")
        let statistics = SRTStatistics(direction: .receiving, traffic: traffic, stream: "\(session.path)")
        defer { statistics.finish() }
        while true {
            statistics.sampleIfDue(socket)
            let frames: [MediaFrame]?
            do {
                frames = try demuxer.nextFrames()
            } catch {
                return .failed("the MPEG-TS does not demux: \(error)")
            }
            guard let frames else {
                return reader.timedOut ? .timedOut("no data for \(listener.configuration.idleTimeout)") : .left
            }
            guard !frames.isEmpty else { continue }
            for frame in frames {
                hub.publish(frame, publisher: session.id)
            }
            hub.flush(force: true)
        }
    }
}

/// Reads an SRT live socket's messages (one 1316-byte TS datagram at a time) into whatever
/// buffer libavformat offers, keeping what does not fit for the next read.
final class SRTMessageReader {
    private let socket: SRTSOCKET
    /// SRT's largest live payload is 1456 bytes.
    private var staging = [UInt8](repeating: 0, count: 1500)
    private var pending = 0..<0
    /// The stream is over (the caller left, was closed, or fell silent): every later read
    /// answers 0 at once, whatever libavformat tries.
    private(set) var ended = false
    private(set) var timedOut = false

    init(socket: SRTSOCKET) {
        self.socket = socket
    }

    /// Bytes copied into `buffer`; 0 at the end (the caller left, or the idle timeout).
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        if pending.isEmpty {
            guard !ended else { return 0 }
            let received = staging.withUnsafeMutableBytes { bytes in
                srt_recvmsg(socket, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(bytes.count))
            }
            guard received > 0 else {
                ended = true
                // A blocking read past SRTO_RCVTIMEO fails with SRT_ETIMEOUT.
                let code = srt_getlasterror(nil)
                timedOut = code == Int32(SRT_ETIMEOUT.rawValue) || code == Int32(SRT_EASYNCRCV.rawValue)
                return 0
            }
            pending = 0..<Int(received)
        }
        let count = min(buffer.count, pending.count)
        staging.withUnsafeBytes { bytes in
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[pending.lowerBound..<(pending.lowerBound + count)]))
        }
        pending = (pending.lowerBound + count)..<pending.upperBound
        return count
    }
}

@available(*, unavailable)
extension SRTMessageReader: Sendable {}
