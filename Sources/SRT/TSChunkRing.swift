import Foundation
import Metrics
import NIOCore

/// A stream's muxed MPEG-TS as its SRT players read it: the newest chunks, each a take of
/// the muxer, shared by every player (a chunk is a `ByteBuffer`; a player holds references,
/// never copies, until libsrt copies the bytes into its send buffer).
///
/// Bounded in bytes and in count; the oldest chunks go first. A player whose next chunk
/// has gone (it fell that far behind) resumes at the newest chunk a player can join at (one
/// that starts with the tables and a keyframe), and that skip is counted. A new player
/// starts at that chunk too, so it gets a picture at once, as an RTMP viewer gets the GOP.
///
/// One reader per ring: the feed's `TSSender`, on a thread of its own, which waits on a
/// condition with a deadline and sends each new chunk to every player; the muxer's queue
/// appends and wakes it. The state below is guarded by `condition`'s lock, hence
/// `@unchecked Sendable`.
final class TSChunkRing: @unchecked Sendable {
    struct Chunk {
        let sequence: Int
        let bytes: ByteBuffer
        /// Starts with PAT/PMT and a keyframe (or, for audio only, an audio frame).
        let joinable: Bool
    }

    enum Read {
        /// Chunks in order.
        case chunks([Chunk])
        /// The stream ended and everything was read.
        case ended
        /// Nothing new yet.
        case nothingYet
    }

    let maxBytes: Int
    let maxChunks: Int

    private let condition = NSCondition()
    private var chunks = CircularBuffer<Chunk>(initialCapacity: 64)
    private var bytes = 0
    private var nextSequence = 0
    /// The newest joinable chunk still held.
    private var joinAt: Int?
    private var isEnded = false
    private var woken = false

    static let skips = Counter(label: "estuary_srt_player_skips_total")

    init(maxBytes: Int, maxChunks: Int) {
        self.maxBytes = max(1, maxBytes)
        self.maxChunks = max(1, maxChunks)
    }

    /// Appends a take of the muxer and wakes the players.
    func append(_ buffer: ByteBuffer, joinable: Bool) {
        guard buffer.readableBytes > 0 else { return }
        condition.lock()
        defer { condition.unlock() }
        guard !isEnded else { return }
        let chunk = Chunk(sequence: nextSequence, bytes: buffer, joinable: joinable)
        nextSequence += 1
        chunks.append(chunk)
        bytes += buffer.readableBytes
        if joinable { joinAt = chunk.sequence }
        while (bytes > maxBytes || chunks.count > maxChunks), chunks.count > 1 {
            let gone = chunks.removeFirst()
            bytes -= gone.bytes.readableBytes
            if joinAt == gone.sequence { joinAt = nil }
        }
        condition.broadcast()
    }

    /// Wakes the reader waiting in `wait(beyond:until:)` (a player was attached).
    func wake() {
        condition.lock()
        woken = true
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until a chunk at `next` or later was appended, the ring ended (unless
    /// `afterEnd`: a reader with nothing left to read of an ended ring waits for `wake()`),
    /// `wake()` was called, or `deadline` passed; false only for the deadline.
    func wait(beyond next: Int, afterEnd: Bool = false, until deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while nextSequence <= next, !isEnded || afterEnd, !woken {
            guard condition.wait(until: deadline) else { return false }
        }
        woken = false
        return true
    }

    /// The sequence the next appended chunk will have.
    var newest: Int {
        condition.lock()
        defer { condition.unlock() }
        return nextSequence
    }

    /// No more chunks will come: players read what is left, then end.
    func end() {
        condition.lock()
        isEnded = true
        condition.broadcast()
        condition.unlock()
    }

    /// The chunks from `next` on (nil: a new player, which starts where it can join), at
    /// once: the reader waits in `wait(beyond:afterEnd:until:)`, never here.
    func read(from next: Int?) -> Read {
        condition.lock()
        defer { condition.unlock() }
        var start = next
        if let wanted = start, let oldest = chunks.first?.sequence, wanted < oldest {
            // Fell behind past what is kept: on to the newest place to join (counted once).
            Self.skips.increment()
            start = nil
        }
        if let from = start ?? joinAt, let oldest = chunks.first?.sequence, from >= oldest, from < nextSequence {
            return .chunks(Array(chunks[chunks.index(chunks.startIndex, offsetBy: from - oldest)...]))
        }
        return isEnded ? .ended : .nothingYet
    }
}
