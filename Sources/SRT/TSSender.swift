import CSRT
import Foundation
import Metrics
import NIOCore
import Session
import Synchronization

/// Sends a stream's shared MPEG-TS to all of its SRT players from one thread: each chunk the
/// muxer appends to the ring wakes this thread once, and it hands the chunk to every player
/// in turn, with sends that never block (`SRTO_SNDSYN` off).
///
/// Why one thread per stream and not one per player: at a contribution bitrate a stream's
/// TS comes in 50–100 chunks a second (a frame each), and a thread per player meant that
/// many wake-ups per player; here it is that many for the stream. libsrt's own send queue
/// then takes a burst of players' packets in one wake-up as well.
///
/// A player whose libsrt send buffer is full (its caller takes nothing) is not waited for:
/// it skips to the next chunk it can join at (tables and a keyframe), counted in
/// `estuary_srt_player_skips_total`, and is dropped when that lasts the write timeout.
final class TSSender: Sendable {
    /// A player handed to the sender: what it needs to send, and to say how the player ended.
    final class Attachment: Sendable {
        let socket: SRTSOCKET
        let traffic: SessionTraffic
        /// Set by a kick (which also closes the socket); read on each pass.
        let endedBy = Mutex<SessionEndReason?>(nil)
        /// Called once, on the sender's thread, when the player is done.
        let finish: @Sendable (SessionEndReason) -> Void

        init(socket: SRTSOCKET, traffic: SessionTraffic, finish: @escaping @Sendable (SessionEndReason) -> Void) {
            self.socket = socket
            self.traffic = traffic
            self.finish = finish
        }

        /// Ends the player from outside the sender (a kick): it is finished at the next pass.
        func end(_ reason: SessionEndReason) {
            endedBy.withLock { $0 = $0 ?? reason }
        }
    }

    private let ring: TSChunkRing
    private let writeTimeout: Duration
    /// Attached, not yet taken in by the sending thread.
    private let inbox = Mutex<[Attachment]>([])
    /// No player will be attached any more (the feed stopped): the thread ends once it has
    /// finished the ones it has. Not the ring's end: a player admitted to an ended stream
    /// may still be on its way to `attach`, and must be finished too.
    private let stopped = Atomic<Bool>(false)

    init(ring: TSChunkRing, writeTimeout: Duration) {
        self.ring = ring
        self.writeTimeout = writeTimeout
        let thread = Thread { [self] in run() }
        thread.name = "srt-ts-sender"
        thread.start()
    }

    /// Adds a player; it starts at the newest chunk it can join at.
    func attach(_ attachment: Attachment) {
        _ = csrt_set_bool(attachment.socket, SRTO_SNDSYN, 0)
        inbox.withLock { $0.append(attachment) }
        ring.wake()
    }

    /// The feed stopped: no player will be attached any more.
    func stop() {
        stopped.store(true, ordering: .releasing)
        ring.wake()
    }

    /// The sending thread: until it was stopped and every player was finished.
    private func run() {
        var players: [TSPlayerState] = []
        var seen = ring.newest
        var lastCheck = ContinuousClock.now
        while true {
            // With no one to send to, an ended ring is no news: wait for a player or the stop.
            let woken = ring.wait(beyond: seen, afterEnd: players.isEmpty, until: Date().addingTimeInterval(1))
            for attachment in inbox.withLock({ inbox in defer { inbox.removeAll() }; return inbox }) {
                players.append(TSPlayerState(attachment))
            }
            seen = ring.newest
            // One read per place in the ring: the players at the live edge share it.
            var reads: [Int: TSChunkRing.Read] = [:]
            var done: [(TSPlayerState, SessionEndReason)] = []
            let now = ContinuousClock.now
            let checkStates = !woken || now - lastCheck >= .seconds(1)
            if checkStates { lastCheck = now }
            for player in players {
                if let reason = player.attachment.endedBy.withLock({ $0 }) {
                    done.append((player, reason))
                    continue
                }
                let key = player.next ?? -1
                let read = reads[key] ?? ring.read(from: player.next)
                reads[key] = read
                if let reason = send(read, to: player, now: now) {
                    done.append((player, reason))
                    continue
                }
                player.statistics.sampleIfDue(player.attachment.socket, now: now)
                // Nothing sent for a second (a publisher that paused): is the caller there?
                if checkStates, srt_getsockstate(player.attachment.socket) != SRTS_CONNECTED {
                    done.append((player, .left))
                }
            }
            if !done.isEmpty {
                let ended = Set(done.map { ObjectIdentifier($0.0) })
                players.removeAll { ended.contains(ObjectIdentifier($0)) }
                for (player, reason) in done {
                    player.attachment.finish(player.attachment.endedBy.withLock { $0 } ?? reason)
                }
            }
            if players.isEmpty, stopped.load(ordering: .acquiring), inbox.withLock({ $0.isEmpty }) { return }
        }
    }

    /// Sends what `read` holds that `player` has not had; why the player ends, or nil.
    private func send(_ read: TSChunkRing.Read, to player: TSPlayerState, now: ContinuousClock.Instant) -> SessionEndReason? {
        switch read {
        case .ended:
            return .streamEnded
        case .timedOut:
            break
        case .chunks(let chunks, let after):
            player.next = after
            for chunk in chunks {
                if let resumeAfter = player.resumeAfter {
                    // Stalled: nothing until a chunk it can join at, after the one it lost.
                    guard chunk.joinable, chunk.sequence > resumeAfter else { continue }
                }
                switch send(chunk.bytes.readableBytesView, on: player) {
                case .sent:
                    player.resumeAfter = nil
                    player.stalledSince = nil
                case .full:
                    if player.stalledSince == nil {
                        player.stalledSince = now
                        TSChunkRing.skips.increment()
                    }
                    player.resumeAfter = chunk.sequence
                case .failed:
                    return .left
                }
            }
        }
        if let since = player.stalledSince, now - since >= writeTimeout {
            return .timedOut("the SRT caller took nothing for \(writeTimeout)")
        }
        return nil
    }

    private enum SendResult {
        case sent
        /// libsrt's send buffer is full: the caller takes nothing.
        case full
        case failed
    }

    /// Sends `bytes` in SRT messages, without blocking.
    private func send(_ bytes: ByteBufferView, on player: TSPlayerState) -> SendResult {
        let socket = player.attachment.socket
        var index = bytes.startIndex
        defer { player.attachment.traffic.sent(index - bytes.startIndex) }
        while index < bytes.endIndex {
            let end = bytes.index(index, offsetBy: min(TSMessagePacker.messageBytes, bytes.endIndex - index))
            let sent = bytes[index..<end].withContiguousStorageIfAvailable { slice in
                srt_sendmsg2(socket, slice.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }, Int32(slice.count), nil)
            } ?? -1
            guard sent >= 0 else {
                return srt_getlasterror(nil) == Int32(SRT_EASYNCSND.rawValue) ? .full : .failed
            }
            index = end
        }
        return .sent
    }
}

/// A player as the sending thread keeps it; only that thread touches it.
private final class TSPlayerState {
    let attachment: TSSender.Attachment
    let statistics: SRTStatistics
    /// The next chunk to send; nil until the first read (which starts where it can join).
    var next: Int?
    /// The chunk a full send buffer cost it: it resumes at a joinable chunk after this one.
    var resumeAfter: Int?
    var stalledSince: ContinuousClock.Instant?

    init(_ attachment: TSSender.Attachment) {
        self.attachment = attachment
        statistics = SRTStatistics(direction: .sending, traffic: attachment.traffic, stream: nil)
    }
}
