import NIOCore
import Testing

@testable import RTMP

struct ControlMessageTests {
    @Test
    func setChunkSizeRoundTrips() throws {
        let message = SetChunkSize(chunkSize: 4096).message()
        #expect(message.typeID == 1 && message.chunkStreamID == 2 && message.streamID == 0)
        #expect(message.payload.bytes == Wire.u32(4096))
        #expect(try SetChunkSize(from: message.payload) == SetChunkSize(chunkSize: 4096))
        #expect(throws: MessageError.truncated(.setChunkSize, length: 2)) { try SetChunkSize(from: ByteBuffer([0, 1])) }
    }

    @Test
    func abortAcknowledgementAndWindowRoundTrip() throws {
        #expect(Abort(chunkStreamID: 6).message().payload.bytes == Wire.u32(6))
        #expect(try Abort(from: ByteBuffer(Wire.u32(6))) == Abort(chunkStreamID: 6))
        #expect(Acknowledgement(sequenceNumber: 5_000_000).message().typeID == 3)
        #expect(try Acknowledgement(from: ByteBuffer(Wire.u32(7))) == Acknowledgement(sequenceNumber: 7))
        let window = WindowAcknowledgementSize(windowSize: 2_500_000).message()
        #expect(window.typeID == 5 && window.payload.bytes == Wire.u32(2_500_000))
        #expect(try WindowAcknowledgementSize(from: window.payload).windowSize == 2_500_000)
    }

    @Test(arguments: [
        (SetPeerBandwidth.LimitType.hard, UInt8(0)), (.soft, 1), (.dynamic, 2),
    ])
    func setPeerBandwidthRoundTrips(_ limit: SetPeerBandwidth.LimitType, _ raw: UInt8) throws {
        let message = SetPeerBandwidth(windowSize: 2_500_000, limitType: limit).message()
        #expect(message.typeID == 6)
        #expect(message.payload.bytes == Wire.u32(2_500_000) + [raw])
        #expect(try SetPeerBandwidth(from: message.payload) == SetPeerBandwidth(windowSize: 2_500_000, limitType: limit))
    }

    @Test
    func setPeerBandwidthRejectsUnknownLimitType() {
        #expect(throws: MessageError.invalidLimitType(3)) { try SetPeerBandwidth(from: ByteBuffer(Wire.u32(1) + [3])) }
    }

    static let userControlVectors: [(UserControl, [UInt8])] = [
        (.streamBegin(streamID: 1), [0, 0] + Wire.u32(1)),
        (.streamEOF(streamID: 1), [0, 1] + Wire.u32(1)),
        (.streamDry(streamID: 1), [0, 2] + Wire.u32(1)),
        (.setBufferLength(streamID: 1, milliseconds: 3000), [0, 3] + Wire.u32(1) + Wire.u32(3000)),
        (.streamIsRecorded(streamID: 1), [0, 4] + Wire.u32(1)),
        (.pingRequest(timestamp: 99), [0, 6] + Wire.u32(99)),
        (.pingResponse(timestamp: 99), [0, 7] + Wire.u32(99)),
        (.unknown(eventType: 31, data: ByteBuffer(Wire.u32(1))), [0, 31] + Wire.u32(1)),
    ]

    @Test(arguments: ControlMessageTests.userControlVectors)
    func userControlRoundTrips(_ event: UserControl, _ bytes: [UInt8]) throws {
        let message = event.message()
        #expect(message.typeID == 4 && message.chunkStreamID == 2)
        #expect(message.payload.bytes == bytes)
        #expect(try UserControl(from: ByteBuffer(bytes)) == event)
    }

    @Test
    func userControlRejectsTruncatedEvent() {
        #expect(throws: MessageError.truncated(.userControl, length: 6)) {
            try UserControl(from: ByteBuffer([0, 3] + Wire.u32(1)))
        }
    }
}
