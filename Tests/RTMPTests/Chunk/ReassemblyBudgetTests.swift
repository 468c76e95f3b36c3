import NIOCore
import Synchronization
import Testing

@testable import RTMP

/// The node-wide reassembly budget: what is charged (bytes that arrived, never a declared
/// length), who pays when it runs short (the costliest holder, not the next to ask), and the
/// property that a connection whose messages finish within its share never fails.
struct ReassemblyBudgetTests {
    /// One video message's chunks on chunk stream 4, at the default chunk size of 128.
    private func chunks(length: Int, upTo count: Int? = nil) -> [UInt8] {
        var bytes: [UInt8] = [0x04] + header0(ts: 0, length: length, type: 9)
        let body = Wire.pattern(count ?? length)
        var offset = 0
        while offset < body.count {
            if offset > 0 { bytes.append(0xC4) }  // type 3 continuation on chunk stream 4
            let end = min(offset + 128, body.count)
            bytes += body[offset..<end]
            offset = end
        }
        return bytes
    }

    private func feed(_ bytes: [UInt8], to decoder: inout ChunkDecoder) throws(ChunkError) -> [RTMPMessage] {
        var buffer = ByteBuffer(bytes)
        var messages: [RTMPMessage] = []
        while let message = try decoder.next(from: &buffer) { messages.append(message) }
        return messages
    }

    @Test("A declared length costs nothing until its bytes come")
    func declaredLengthReservesNothing() throws {
        let budget = ReassemblyBudget(limit: 1 << 20)
        var decoder = ChunkDecoder(limits: ChunkLimits(nodeBudget: budget))
        // A 16 MiB video message announced, 100 bytes of it sent.
        _ = try feed(chunks(length: 16 * 1024 * 1024 - 1, upTo: 100), to: &decoder)
        #expect(decoder.unfinishedMessages == 1)
        #expect(budget.inUse == 128, "the 100 bytes that came, in their 128-byte buffer")
        #expect(decoder.bytesInReassembly == 128)
        // More of it: the buffer grows in powers of two, charged as it grows.
        _ = try feed(Wire.pattern(28) + [0xC4] + Wire.pattern(128) + [0xC4] + Wire.pattern(128), to: &decoder)
        #expect(budget.inUse == 512)
        decoder.releaseReservations()
        #expect(budget.inUse == 0)
        #expect(budget.holderCount == 0)
    }

    @Test("A finished message gives its bytes back; a message in one chunk is never charged")
    func finishedMessagesReturnTheirBytes() throws {
        let budget = ReassemblyBudget(limit: 1 << 20)
        var decoder = ChunkDecoder(limits: ChunkLimits(nodeBudget: budget))
        let messages = try feed(chunks(length: 1000) + [0x04] + header0(ts: 0, length: 100, type: 8) + Wire.pattern(100), to: &decoder)
        #expect(messages.map(\.payload.readableBytes) == [1000, 100])
        #expect(messages.first?.payload.bytes == Wire.pattern(1000))
        #expect(budget.inUse == 0)
        #expect(decoder.unfinishedMessages == 0)
        #expect(budget.holderCount == 0)
    }

    @Test("Before publish, a media header is held to the command size and the connection to its small share")
    func mediaNeedsPublish() {
        var decoder = ChunkDecoder(limits: ChunkLimits(maxCommandMessageSize: 64 * 1024))
        decoder.acceptsMedia = false
        #expect(throws: ChunkError.messageTooLarge(100_000, limit: 64 * 1024)) {
            _ = try feed([0x04] + header0(ts: 0, length: 100_000, type: 9), to: &decoder)
        }
        var publisher = ChunkDecoder(limits: ChunkLimits(maxCommandMessageSize: 64 * 1024))
        #expect(throws: Never.self) { _ = try feed([0x04] + header0(ts: 0, length: 100_000, type: 9), to: &publisher) }
    }

    @Test("The connection's share counts bytes that arrived")
    func connectionShareCountsArrivals() throws {
        var decoder = ChunkDecoder(limits: ChunkLimits(maxBufferedBytes: 1024))
        // Two 4000-byte messages on two chunk streams, a chunk of each: 8000 bytes declared,
        // 256 held.
        _ = try feed([0x04] + header0(ts: 0, length: 4000, type: 9) + Wire.pattern(128)
            + [0x06] + header0(ts: 0, length: 4000, type: 9) + Wire.pattern(128), to: &decoder)
        #expect(decoder.bytesInReassembly == 256)
        // The first grows 256, 512, then 1024 bytes of storage at its fifth chunk: 1152 in all.
        #expect(throws: ChunkError.tooManyBufferedBytes(1152, limit: 1024)) {
            var bytes: [UInt8] = []
            for _ in 0..<4 { bytes += [0xC4] + Wire.pattern(128) }
            _ = try feed(bytes, to: &decoder)
        }
    }

    @Test("When the budget runs short, the connection holding most pays, not the one that asks")
    func theLargestHolderIsShed() throws {
        let budget = ReassemblyBudget(limit: 64 * 1024, headroom: 8 * 1024)
        let shedCalls = Atomic<Int>(0)
        var attacker = ChunkDecoder(limits: ChunkLimits(nodeBudget: budget))
        attacker.acceptsMedia = true
        attacker.onShed = { shedCalls.add(1, ordering: .relaxed) }
        // The attacker holds 32 KiB of a message it never finishes.
        _ = try feed(chunks(length: 1_000_000, upTo: 32 * 1024), to: &attacker)
        #expect(budget.inUse == 32 * 1024)
        // A second attacker holds 15 KiB (16 KiB of storage).
        var second = ChunkDecoder(limits: ChunkLimits(nodeBudget: budget))
        _ = try feed(chunks(length: 1_000_000, upTo: 15 * 1024), to: &second)
        // The publisher's 10,000-byte frames (16 KiB of storage each) pass the threshold.
        var publisher = ChunkDecoder(limits: ChunkLimits(nodeBudget: budget))
        for _ in 0..<20 {
            let messages = try feed(chunks(length: 10_000), to: &publisher)
            #expect(messages.count == 1)
        }
        #expect(shedCalls.load(ordering: .relaxed) == 1)
        #expect(throws: ChunkError.shedByNodeBudget(held: 32 * 1024)) {
            _ = try feed([0xC4] + Wire.pattern(128), to: &attacker)
        }
        // The second attacker was not needed to make room, and goes on.
        #expect(throws: Never.self) { _ = try feed([0xC4] + Wire.pattern(128), to: &second) }
        attacker.releaseReservations()
        second.releaseReservations()
        #expect(budget.inUse == 0)
    }

    @Test("Between holders of the same size, the one that has held longest pays")
    func theOldestHolderIsShed() throws {
        let now = Atomic<UInt64>(1_000_000_000)
        let budget = ReassemblyBudget(limit: 64 * 1024, headroom: 8 * 1024, clock: { now.load(ordering: .relaxed) })
        var old = ChunkDecoder(limits: ChunkLimits(nodeBudget: budget))
        _ = try feed(chunks(length: 1_000_000, upTo: 16 * 1024), to: &old)
        now.add(10_000_000_000, ordering: .relaxed)  // 10 s later
        // A larger holder (30 KiB, 32 KiB of storage) that began just now costs less than
        // 16 KiB held for 10 s.
        var recent = ChunkDecoder(limits: ChunkLimits(nodeBudget: budget))
        _ = try feed(chunks(length: 1_000_000, upTo: 30 * 1024), to: &recent)
        var publisher = ChunkDecoder(limits: ChunkLimits(nodeBudget: budget))
        _ = try feed(chunks(length: 10_000), to: &publisher)
        #expect(throws: ChunkError.shedByNodeBudget(held: 16 * 1024)) { _ = try feed([0xC4] + Wire.pattern(128), to: &old) }
        #expect(throws: Never.self) { _ = try feed([0xC4] + Wire.pattern(128), to: &recent) }
        old.releaseReservations()
        recent.releaseReservations()
        publisher.releaseReservations()
        #expect(budget.inUse == 0)
    }

    @Test("A stalled message is seen by its progress checks")
    func progressChecksSeeAStall() throws {
        var decoder = ChunkDecoder()
        _ = try feed(chunks(length: 1000, upTo: 200), to: &decoder)
        #expect(decoder.checkProgress() == 0, "a message begun since the last check made progress")
        #expect(decoder.checkProgress() == 1)
        #expect(decoder.checkProgress() == 2)
        _ = try feed(Wire.pattern(56), to: &decoder)
        #expect(decoder.checkProgress() == 0)
        #expect(decoder.checkProgress() == 1)
        var rest: [UInt8] = []
        var left = 1000 - 256
        while left > 0 {
            let piece = min(128, left)
            rest += [0xC4] + Wire.pattern(piece)
            left -= piece
        }
        #expect(try feed(rest, to: &decoder).count == 1)
        #expect(decoder.unfinishedMessages == 0)
        #expect(decoder.checkProgress() == 0)
    }

    /// The property of issue 27: for any interleaving of finished and unfinished messages over
    /// decoders that share one budget, a decoder whose holdings stay within its share (the
    /// shed threshold over the number of decoders) never fails. Shed decoders are closed at
    /// once, as their connections are; the budget never passes its limit and ends at zero.
    @Test("Any interleaving: a decoder within its share never fails", arguments: 0..<24)
    func withinShareNeverFails(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let decoderCount = 4 + Int(random.next() % 13)
        let budget = ReassemblyBudget(limit: 256 * 1024, headroom: 32 * 1024, clock: { 0 })
        let share = budget.shedThreshold / decoderCount
        struct Peer {
            var decoder: ChunkDecoder
            var honest: Bool
            var closed = false
            /// Bytes of the current message still to send on each of two chunk streams.
            var remaining: [Int] = [0, 0]
        }
        var peers: [Peer] = (0..<decoderCount).map { index in
            var decoder = ChunkDecoder(limits: ChunkLimits(maxChunkSize: 4096, nodeBudget: budget))
            decoder.acceptsMedia = true
            return Peer(decoder: decoder, honest: index % 2 == 0)
        }
        // Honest messages: two at once at most, each within half the share once in powers of two.
        let honestLargest = max(1, share / 4)
        for _ in 0..<4000 {
            let index = Int(random.next() % UInt64(decoderCount))
            guard !peers[index].closed else { continue }
            let stream = Int(random.next() % 2)
            var bytes: [UInt8] = []
            if peers[index].remaining[stream] == 0 {
                let largest = peers[index].honest ? honestLargest : 200_000
                let length = 1 + Int(random.next() % UInt64(largest))
                peers[index].remaining[stream] = length
                bytes += [UInt8(4 + stream)] + header0(ts: 0, length: length, type: 9)
            } else {
                bytes += [0xC0 | UInt8(4 + stream)]
            }
            let chunk = min(128, peers[index].remaining[stream])
            bytes += Wire.pattern(chunk)
            do {
                var buffer = ByteBuffer(bytes)
                while try peers[index].decoder.next(from: &buffer) != nil {}
                peers[index].remaining[stream] -= chunk
            } catch {
                #expect(!peers[index].honest, "seed \(seed): an honest decoder within its share of \(share) failed with \(error)")
                peers[index].decoder.releaseReservations()
                peers[index].closed = true
            }
            #expect(budget.inUse <= budget.limit)
            // Shed connections close at once.
            for other in peers.indices where !peers[other].closed && peers[other].decoder.isShed {
                #expect(!peers[other].honest, "seed \(seed): an honest decoder was shed")
                peers[other].decoder.releaseReservations()
                peers[other].closed = true
            }
        }
        for index in peers.indices { peers[index].decoder.releaseReservations() }
        #expect(budget.inUse == 0)
        #expect(budget.holderCount == 0)
    }
}

/// A small deterministic generator, so that a failing seed can be replayed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { self.state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
