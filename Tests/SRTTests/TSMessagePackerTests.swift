import NIOCore
import Testing

@testable import SRT

/// The muxer's takes cut into whole 1316-byte SRT messages: what a player's datagrams carry.
struct TSMessagePackerTests {
    /// `packets` TS packets, each 188 bytes of its index (so that order can be checked).
    private func take(_ packets: Int, from first: UInt8) -> ByteBuffer {
        var buffer = ByteBuffer()
        for index in 0..<packets { buffer.writeRepeatingByte(first &+ UInt8(index), count: 188) }
        return buffer
    }

    private func packetsOf(_ chunks: [TSMessagePacker.Chunk]) -> [UInt8] {
        chunks.flatMap { chunk in stride(from: 0, to: chunk.bytes.readableBytes, by: 188).map { chunk.bytes.getInteger(at: chunk.bytes.readerIndex + $0)! } }
    }

    @Test func aFramesTailWaitsForTheNextFramesBytes() {
        var packer = TSMessagePacker()
        // 10 packets: one message now, three held.
        let first = packer.add(take(10, from: 0), joinable: false)
        #expect(first.map(\.bytes.readableBytes) == [1316])
        #expect(packer.isHolding)
        // 5 more: the held three and four of these make a message of seven, one held.
        let second = packer.add(take(5, from: 10), joinable: false)
        #expect(second.map(\.bytes.readableBytes) == [1316])
        #expect(packetsOf(first + second) == Array(0..<14))
        let rest = packer.flush()
        #expect(rest?.bytes.readableBytes == 188)
        #expect(packer.flush() == nil)
        #expect(!packer.isHolding)
    }

    @Test func aJoinableTakeBeginsItsOwnChunk() {
        var packer = TSMessagePacker()
        _ = packer.add(take(3, from: 0), joinable: false)
        let chunks = packer.add(take(9, from: 100), joinable: true)
        // The held three first, short, not joinable; then the tables' take, from its start.
        #expect(chunks.map(\.bytes.readableBytes) == [3 * 188, 1316])
        #expect(chunks.map(\.joinable) == [false, true])
        #expect(chunks[1].bytes.getInteger(at: chunks[1].bytes.readerIndex, as: UInt8.self) == 100)
        #expect(packer.flush().map { ($0.bytes.readableBytes, $0.joinable) } ?? (0, true) == (2 * 188, false))
    }

    @Test func aSmallJoinableTakeStaysJoinableWhileHeld() {
        var packer = TSMessagePacker()
        // An audio-only join point smaller than a message: held, and still where a player joins.
        #expect(packer.add(take(4, from: 0), joinable: true).isEmpty)
        let chunks = packer.add(take(5, from: 4), joinable: false)
        #expect(chunks.map(\.joinable) == [true])
        #expect(packetsOf(chunks) == Array(0..<7))
        #expect(packer.flush()?.joinable == false)
    }

    @Test func anAudioTakeHeldWholeGoesOutWithTheNextVideoTake() {
        var packer = TSMessagePacker()
        // Two audio takes of 9 packets, held whole: nothing goes yet.
        #expect(packer.add(take(9, from: 0), joinable: false, holdAll: true).isEmpty)
        #expect(packer.add(take(9, from: 9), joinable: false, holdAll: true).isEmpty)
        // The video take after them: 25 packets in all, three whole messages in order.
        let chunks = packer.add(take(7, from: 18), joinable: false)
        #expect(chunks.map(\.bytes.readableBytes) == [3 * 1316])
        #expect(packetsOf(chunks) == Array(0..<21))
        #expect(packer.flush()?.bytes.readableBytes == 4 * 188)
        // A join point is never held, and what was held goes out before it.
        #expect(packer.add(take(2, from: 50), joinable: false, holdAll: true).isEmpty)
        let join = packer.add(take(7, from: 60), joinable: true, holdAll: true)
        #expect(join.map(\.joinable) == [false, true])
        // Held whole up to the bound, and no further.
        var bounded = TSMessagePacker()
        var sent = 0
        for index in 0..<100 { sent += bounded.add(take(7, from: UInt8(index)), joinable: false, holdAll: true).count }
        #expect(sent > 0)
    }

    @Test func wholeTakesPassAsTheyAre() {
        var packer = TSMessagePacker()
        let chunks = packer.add(take(14, from: 0), joinable: true)
        #expect(chunks.map(\.bytes.readableBytes) == [2 * 1316])
        #expect(!packer.isHolding)
        #expect(packer.add(ByteBuffer(), joinable: false).isEmpty)
    }
}
