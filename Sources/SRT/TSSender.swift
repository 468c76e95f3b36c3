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
/// the next pass resumes it where it stopped; it is dropped when no byte goes out for the
/// write timeout, and skips to the newest join point if it falls out of the ring.
final class TSSender: Sendable {
    /// A player handed to the sender: what it needs to send, and to say how the player ended.
    final class Attachment: Sendable {
        let socket: SRTSOCKET
        let traffic: SessionTraffic
        /// Set by a kick (which also closes the socket); read on each pass.
        let endedBy = Mutex<SessionEndReason?>(nil)
        /// Called once, on the sender's thread, when the player is done, and then let go:
        /// it holds the session, whose kick holds this attachment.
        private let finishing: Mutex<(@Sendable (SessionEndReason) -> Void)?>

        init(socket: SRTSOCKET, traffic: SessionTraffic, finish: @escaping @Sendable (SessionEndReason) -> Void) {
            self.socket = socket
            self.traffic = traffic
            finishing = Mutex(finish)
        }

        /// Ends the player with the kick's reason if there was one, else `reason`; only the
        /// first call does anything.
        func finish(_ reason: SessionEndReason) {
            let finish = finishing.withLock { finishing in
                defer { finishing = nil }
                return finishing
            }
            finish?(endedBy.withLock { $0 } ?? reason)
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
                for (player, reason) in done { player.attachment.finish(reason) }
            }
            if players.isEmpty, stopped.load(ordering: .acquiring), inbox.withLock({ $0.isEmpty }) { return }
        }
    }

    /// Sends what `read` holds that `player` has not had; why the player ends, or nil.
    ///
    /// A send that finds libsrt's buffer full stops there, and the next pass resumes at the
    /// same byte: the player gets whole frames, late, rather than cut ones (libsrt's live
    /// mode drops from its buffer what is too late to play anyway). A player that gets no
    /// byte out for the write timeout is dropped; one that falls out of the ring resumes at
    /// its newest join point (`TSChunkRing.read`, counted in `estuary_srt_player_skips_total`).
    private func send(_ read: TSChunkRing.Read, to player: TSPlayerState, now: ContinuousClock.Instant) -> SessionEndReason? {
        switch read {
        case .ended:
            return .streamEnded
        case .nothingYet:
            break
        case .chunks(let chunks):
            for chunk in chunks {
                // Where in this chunk to go on: mid-chunk only when the last pass stopped in it.
                let offset = chunk.sequence == player.next ? player.offset : 0
                let (sent, result) = send(chunk.bytes.readableBytesView, from: offset, on: player)
                if sent > 0 { player.stalledSince = nil }
                switch result {
                case .sent:
                    player.next = chunk.sequence + 1
                    player.offset = 0
                case .full:
                    player.next = chunk.sequence
                    player.offset = offset + sent
                    if player.stalledSince == nil { player.stalledSince = now }
                    return stalled(player, now: now)
                case .failed:
                    return .left
                }
            }
        }
        return stalled(player, now: now)
    }

    /// Why a player that has got no byte out for the write timeout ends, or nil.
    private func stalled(_ player: TSPlayerState, now: ContinuousClock.Instant) -> SessionEndReason? {
        guard let since = player.stalledSince, now - since >= writeTimeout else { return nil }
        return .timedOut("the SRT caller took nothing for \(writeTimeout)")
    }

    private enum SendResult {
        case sent
        /// libsrt's send buffer is full: the caller takes nothing for now.
        case full
        case failed
    }

    /// Sends `bytes` from `offset` on in SRT messages, without blocking: how many bytes went.
    private func send(_ bytes: ByteBufferView, from offset: Int, on player: TSPlayerState) -> (Int, SendResult) {
        let socket = player.attachment.socket
        let start = bytes.index(bytes.startIndex, offsetBy: min(max(0, offset), bytes.count))
        var index = start
        defer { player.attachment.traffic.sent(index - start) }
        while index < bytes.endIndex {
            let end = bytes.index(index, offsetBy: min(TSMessagePacker.messageBytes, bytes.endIndex - index))
            let sent = bytes[index..<end].withContiguousStorageIfAvailable { slice in
                srt_sendmsg2(socket, slice.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }, Int32(slice.count), nil)
            } ?? -1
            guard sent >= 0 else {
                return (index - start, srt_getlasterror(nil) == Int32(SRT_EASYNCSND.rawValue) ? .full : .failed)
            }
            index = end
        }
        return (index - start, .sent)
    }
}

/// A player as the sending thread keeps it; only that thread touches it.
private final class TSPlayerState {
    let attachment: TSSender.Attachment
    let statistics: SRTStatistics
    /// The next chunk to send; nil until the first read (which starts where it can join).
    var next: Int?
    /// How much of chunk `next` went out before libsrt's buffer was full.
    var offset = 0
    /// Since when its sends have found libsrt's buffer full, without a byte going out.
    var stalledSince: ContinuousClock.Instant?

    init(_ attachment: TSSender.Attachment) {
        self.attachment = attachment
        statistics = SRTStatistics(direction: .sending, traffic: attachment.traffic, stream: nil)
    }
}
