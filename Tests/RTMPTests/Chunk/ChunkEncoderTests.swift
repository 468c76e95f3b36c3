import NIOCore
import Testing

@testable import RTMP

struct ChunkEncoderTests {
    @Test(arguments: ChunkVector.all.filter(\.encodable))
    func encodesVector(_ vector: ChunkVector) {
        var encoder = ChunkEncoder()
        var buffer = ByteBuffer()
        for message in vector.messages {
            encoder.encode(message, into: &buffer)
            if message.typeID == MessageType.setChunkSize.rawValue,
                let size = message.payload.getInteger(at: message.payload.readerIndex, as: UInt32.self)
            {
                encoder.chunkSize = Int(size)
            }
        }
        #expect(buffer.bytes == vector.bytes)
    }

    @Test(arguments: ChunkVector.all.filter(\.encodable))
    func encodedSizeMatchesOutput(_ vector: ChunkVector) {
        for message in vector.messages {
            let encoder = ChunkEncoder(chunkSize: 128)
            let buffer = encoder.encode(message, allocator: ByteBufferAllocator())
            let expected = ChunkEncoder.encodedSize(
                payloadLength: message.payload.readableBytes,
                chunkStreamID: message.chunkStreamID,
                timestamp: message.timestamp,
                chunkSize: 128
            )
            #expect(buffer.readableBytes == expected)
        }
    }

    @Test(arguments: [UInt32(2), 63, 64, 319, 320, 65599], [UInt32(0), 0xFFFFFE, 0xFFFFFF, 0xFFFF_FFFF])
    func encoderOutputDecodesForEveryCsidWidthAndTimestamp(_ csid: UInt32, _ timestamp: UInt32) throws {
        let original = message(9, ts: timestamp, csid: csid, Wire.pattern(1000))
        for chunkSize in [1, 7, 128, 4096] {
            let encoder = ChunkEncoder(chunkSize: chunkSize)
            var buffer = encoder.encode(original, allocator: ByteBufferAllocator())
            var decoder = ChunkDecoder()
            if chunkSize != 128 {
                var setSize = ChunkEncoder().encode(SetChunkSize(chunkSize: UInt32(chunkSize)).message(), allocator: ByteBufferAllocator())
                _ = try decoder.next(from: &setSize)
                #expect(decoder.chunkSize == chunkSize)
            }
            let decoded = try decoder.next(from: &buffer)
            #expect(decoded == original)
            #expect(buffer.readableBytes == 0)
        }
    }

    @Test
    func encoderRepeatsExtendedTimestampOnEveryContinuation() {
        let encoder = ChunkEncoder(chunkSize: 2)
        var buffer = ByteBuffer()
        encoder.encode(message(8, ts: 0x0100_0000, csid: 4, [1, 2, 3, 4, 5]), into: &buffer)
        let expected: [UInt8] = [0x04] + header0(ts: 0xFFFFFF, length: 5, type: 8) + Wire.u32(0x0100_0000) + [1, 2]
            + [0xC4] + Wire.u32(0x0100_0000) + [3, 4] + [0xC4] + Wire.u32(0x0100_0000) + [5]
        #expect(buffer.bytes == expected)
    }
}
