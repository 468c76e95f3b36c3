@testable import AMF0
import NIOCore
import Testing

@testable import RTMP

struct AMF0EncoderTests {
    @Test
    func encoderWritesOverlongStringAsLongString() throws {
        let text = String(repeating: "x", count: 70_000)
        var buffer = ByteBuffer()
        AMF0Encoder().encode(.string(text), into: &buffer)
        #expect(buffer.getInteger(at: 0, as: UInt8.self) == 0x0C)
        let decoded = try AMF0Decoder().decode(from: &buffer)
        #expect(decoded == .longString(text))
    }

    @Test
    func encoderRecomputesECMAArrayCount() {
        var buffer = ByteBuffer()
        AMF0Encoder().encode(.ecmaArray([AMF0Property("a", .null), AMF0Property("b", .null)]), into: &buffer)
        #expect(buffer.getInteger(at: 1, as: UInt32.self) == 2)
    }

    @Test
    func roundTripKeepsOrderAndDuplicates() throws {
        let value = AMF0Value.ecmaArray([
            AMF0Property("z", .number(1)), AMF0Property("a", .strictArray([.null, .undefined])),
            AMF0Property("z", .date(0, timeZone: 0)),
        ])
        var buffer = ByteBuffer()
        AMF0Encoder().encode(value, into: &buffer)
        #expect(try AMF0Decoder().decode(from: &buffer) == value)
    }
}
