import NIOCore

/// Cuts a stream's muxed MPEG-TS into whole SRT messages (seven TS packets, 1316 bytes)
/// before the players' sender sees it, so that a player's datagrams are full.
///
/// Why: the muxer's output comes a frame at a time, and a frame is rarely a multiple of
/// 1316 bytes, so sending each take as it came ended nearly every frame with a short
/// datagram (an AAC frame is one of two or three TS packets). Every datagram costs the node
/// a `sendmsg` and its receiver's softirq, per player, and brings an ACK and an ACKACK with
/// it, whatever its size. Held, a frame's last partial message goes out with the next
/// frame's first bytes: what an SRT encoder does (ffmpeg writes 1316-byte messages). The
/// feed bounds how long a tail is held (`TSFeed.holdLimit`).
///
/// A chunk a player can join at must begin with its tables, so a joinable take is never
/// put behind held bytes: those go out first, as a short chunk of their own (once a GOP).
struct TSMessagePacker {
    struct Chunk {
        let bytes: ByteBuffer
        let joinable: Bool
    }

    /// Seven 188-byte TS packets: SRT's default live payload size.
    static let messageBytes = 1316

    /// Less than a message, waiting for more.
    private var held: ByteBuffer?
    /// The held bytes begin a joinable take.
    private var heldJoinable = false

    var isHolding: Bool { held != nil }

    /// The most bytes held back by `holdAll`: past it, whole messages go out anyway.
    static let maxHeldBytes = 64 * 1024

    /// Takes the muxer's `output`; the chunks to send now, whole messages only. `holdAll`:
    /// nothing goes now, whole messages included (an audio frame of a stream with video
    /// waits for the next video frame, so that a player's datagrams come in one burst per
    /// video frame: each burst brings the player's receiver to send an ACK, and the node an
    /// ACKACK).
    mutating func add(_ output: ByteBuffer, joinable: Bool, holdAll: Bool = false) -> [Chunk] {
        guard output.readableBytes > 0 else { return [] }
        var chunks: [Chunk] = []
        var pending = output
        var pendingJoinable = joinable
        if joinable {
            if let chunk = flush() { chunks.append(chunk) }
        } else if var before = held {
            before.writeImmutableBuffer(output)
            pending = before
            pendingJoinable = heldJoinable
        }
        if holdAll, !joinable, pending.readableBytes < Self.maxHeldBytes {
            held = pending
            heldJoinable = pendingJoinable
            return chunks
        }
        held = nil
        heldJoinable = false
        let whole = pending.readableBytes / Self.messageBytes * Self.messageBytes
        if whole < pending.readableBytes {
            held = pending.getSlice(at: pending.readerIndex + whole, length: pending.readableBytes - whole)
            heldJoinable = pendingJoinable && whole == 0
        }
        if whole > 0, let ready = pending.getSlice(at: pending.readerIndex, length: whole) {
            chunks.append(Chunk(bytes: ready, joinable: pendingJoinable))
        }
        return chunks
    }

    /// What is held, as a chunk of its own (its last message short); nil when nothing is.
    mutating func flush() -> Chunk? {
        defer {
            held = nil
            heldJoinable = false
        }
        return held.map { Chunk(bytes: $0, joinable: heldJoinable) }
    }
}
