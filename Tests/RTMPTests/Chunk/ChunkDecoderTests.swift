import NIOCore
import Testing

@testable import RTMP

struct ChunkDecoderTests {
    private func decodeAll(_ bytes: [UInt8], decoder: inout ChunkDecoder) throws(ChunkError) -> [RTMPMessage] {
        var buffer = ByteBuffer(bytes)
        var messages: [RTMPMessage] = []
        while let message = try decoder.next(from: &buffer) {
            messages.append(message)
        }
        return messages
    }

    @Test(arguments: ChunkVector.all)
    func decodesVectorAtOnce(_ vector: ChunkVector) throws {
        var decoder = ChunkDecoder()
        var buffer = ByteBuffer(vector.bytes)
        var messages: [RTMPMessage] = []
        while let message = try decoder.next(from: &buffer) {
            messages.append(message)
        }
        #expect(messages == vector.messages)
        #expect(buffer.readableBytes == 0)
        #expect(decoder.chunkSize == vector.finalChunkSize)
    }

    @Test(arguments: ChunkVector.all)
    func decodesVectorOneByteAtATime(_ vector: ChunkVector) throws {
        // The caller accumulates (as ByteToMessageDecoder does); the decoder consumes whole
        // header pieces and any available payload bytes.
        var decoder = ChunkDecoder()
        var messages: [RTMPMessage] = []
        var buffer = ByteBuffer()
        for byte in vector.bytes {
            buffer.writeInteger(byte)
            while let message = try decoder.next(from: &buffer) {
                messages.append(message)
            }
            #expect(buffer.readableBytes < 16, "only a partial header may stay unconsumed")
        }
        #expect(messages == vector.messages)
        #expect(buffer.readableBytes == 0)
    }

    @Test
    func decoderRejectsContinuationOnUnknownChunkStream() {
        // Type 2 and 3 carry no length: a chunk stream cannot start with them.
        var decoder = ChunkDecoder()
        #expect(throws: ChunkError.unknownChunkStream(3)) {
            _ = try decodeAll([0x83] + Wire.u24(0) + [0xAF], decoder: &decoder)
        }
        var fresh = ChunkDecoder()
        #expect(throws: ChunkError.unknownChunkStream(5)) { _ = try decodeAll([0xC5, 0x00], decoder: &fresh) }
        var twoByte = ChunkDecoder()
        #expect(throws: ChunkError.unknownChunkStream(70)) { _ = try decodeAll([0x80, 6] + Wire.u24(1), decoder: &twoByte) }
    }

    @Test
    func type1StartTakesTheConnectionsPublishingStreamForMedia() throws {
        var decoder = ChunkDecoder()
        decoder.mediaStreamID = 5
        let messages = try decodeAll(
            [0x44] + Wire.u24(40) + Wire.u24(1) + [8, 0xAF] + [0x45] + Wire.u24(0) + Wire.u24(1) + [20, 0x05],
            decoder: &decoder
        )
        #expect(messages == [message(8, stream: 5, ts: 40, csid: 4, [0xAF]), message(20, stream: 0, ts: 0, csid: 5, [0x05])])
        #expect(decoder.chunkStreamsStartedWithType1 == 2)
    }

    @Test
    func type1StartStillChecksTheMessageSize() {
        var decoder = ChunkDecoder(limits: ChunkLimits(maxMessageSize: 1000))
        #expect(throws: ChunkError.messageTooLarge(1001, limit: 1000)) {
            _ = try decodeAll([0x44] + Wire.u24(0) + Wire.u24(1001) + [8], decoder: &decoder)
        }
    }

    @Test
    func decoderChecksMessageSizeBeforeBuffering() {
        var decoder = ChunkDecoder(limits: ChunkLimits(maxMessageSize: 1000))
        // Only the header: the error must come before any payload byte arrives.
        #expect(throws: ChunkError.messageTooLarge(1001, limit: 1000)) {
            _ = try decodeAll([0x06] + header0(ts: 0, length: 1001, type: 9), decoder: &decoder)
        }
        var fmt1 = ChunkDecoder(limits: ChunkLimits(maxMessageSize: 1000))
        #expect(throws: ChunkError.messageTooLarge(0xFFFFFF, limit: 1000)) {
            _ = try decodeAll(
                [0x06] + header0(ts: 0, length: 1, type: 9) + [0] + [0x46] + Wire.u24(0) + Wire.u24(0xFFFFFF) + [9],
                decoder: &fmt1
            )
        }
    }

    @Test
    func decoderRejectsOverlongChunkSize() {
        var decoder = ChunkDecoder()
        #expect(throws: ChunkError.chunkSizeTooLarge(131_072, limit: 65536)) {
            _ = try decodeAll([0x02] + header0(ts: 0, length: 4, type: 1, stream: 0) + Wire.u32(131_072), decoder: &decoder)
        }
    }

    @Test(arguments: [UInt32(0), 0x8000_0000, 0x8000_0080, 0xFFFF_FFFF])
    func decoderRejectsInvalidChunkSize(_ size: UInt32) {
        var decoder = ChunkDecoder()
        #expect(throws: ChunkError.invalidChunkSize(size)) {
            _ = try decodeAll([0x02] + header0(ts: 0, length: 4, type: 1, stream: 0) + Wire.u32(size), decoder: &decoder)
        }
    }

    @Test
    func decoderRejectsShortSetChunkSize() {
        var decoder = ChunkDecoder()
        #expect(throws: ChunkError.malformedControlMessage(typeID: 1, length: 2)) {
            _ = try decodeAll([0x02] + header0(ts: 0, length: 2, type: 1, stream: 0) + [0, 1], decoder: &decoder)
        }
    }

    @Test
    func decoderLimitsChunkStreamCount() throws {
        var decoder = ChunkDecoder(limits: ChunkLimits(maxChunkStreams: 2))
        let two = [0x03] + header0(ts: 0, length: 1, type: 8) + [0] + [0x04] + header0(ts: 0, length: 1, type: 8) + [0]
        #expect(try decodeAll(two, decoder: &decoder).count == 2)
        #expect(throws: ChunkError.tooManyChunkStreams(limit: 2)) {
            _ = try decodeAll([0x05] + header0(ts: 0, length: 1, type: 8) + [0], decoder: &decoder)
        }
    }

    @Test
    func decoderLimitsBytesInReassembly() {
        var decoder = ChunkDecoder(limits: ChunkLimits(maxBufferedBytes: 500))
        // Two 300-byte messages interleaved: their buffers (128, then 256 bytes each, as bytes
        // arrive) pass 500 bytes with the second's second chunk.
        let bytes = [0x04] + header0(ts: 0, length: 300, type: 9) + Wire.pattern(128)
            + [0x06] + header0(ts: 0, length: 300, type: 9) + Wire.pattern(128)
            + [0xC4] + Wire.pattern(128) + [0xC6] + Wire.pattern(128)
        #expect(throws: ChunkError.tooManyBufferedBytes(512, limit: 500)) { _ = try decodeAll(bytes, decoder: &decoder) }
    }

    @Test
    func decoderReturnsSliceWithoutCopyForSingleChunkMessages() throws {
        var decoder = ChunkDecoder()
        var buffer = ByteBuffer([0x04] + header0(ts: 0, length: 3, type: 8) + [1, 2, 3])
        let message = try #require(try decoder.next(from: &buffer))
        #expect(message.payload.bytes == [1, 2, 3])
        #expect(message.payload.capacity == 3, "the payload should be a slice of the input")
    }
}
