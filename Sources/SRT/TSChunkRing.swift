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
/// Players wait on a condition with a deadline, each on its own thread (libsrt's calls
/// block, so players never run in the task pool); the muxer's queue appends and wakes them.
/// The state below is guarded by `condition`'s lock, hence `@unchecked Sendable`.
final class TSChunkRing: @unchecked Sendable {
    struct Chunk {
        let sequence: Int
        let bytes: ByteBuffer
        /// Starts with PAT/PMT and a keyframe (or, for audio only, an audio frame).
        let joinable: Bool
    }

    enum Read {
        /// Chunks in order, and the sequence to ask for next.
        case chunks([Chunk], next: Int)
        /// The stream ended and everything was read.
        case ended
        /// Nothing new before the deadline.
        case timedOut
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

    /// No more chunks will come: players read what is left, then end.
    func end() {
        condition.lock()
        isEnded = true
        condition.broadcast()
        condition.unlock()
    }

    /// The chunks from `next` on (nil: a new player, which starts where it can join),
    /// waiting until `deadline` for some.
    func read(from next: Int?, until deadline: Date) -> Read {
        condition.lock()
        defer { condition.unlock() }
        var start = next
        if let wanted = start, let oldest = chunks.first?.sequence, wanted < oldest {
            // Fell behind past what is kept: on to the newest place to join (counted once).
            Self.skips.increment()
            start = nil
        }
        while true {
            let from = start ?? joinAt
            if let from, let oldest = chunks.first?.sequence, from >= oldest, from < nextSequence {
                let from = from - oldest
                let read = Array(chunks[chunks.index(chunks.startIndex, offsetBy: from)...])
                return .chunks(read, next: nextSequence)
            }
            if isEnded { return .ended }
            guard condition.wait(until: deadline) else { return .timedOut }
        }
    }
}
