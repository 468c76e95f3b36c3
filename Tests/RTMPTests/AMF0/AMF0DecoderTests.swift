@testable import AMF0
import NIOCore
import Testing

@testable import RTMP

struct AMF0Vector: Sendable, CustomTestStringConvertible {
    let name: String
    let bytes: [UInt8]
    let value: AMF0Value
    var testDescription: String { self.name }

    static let all: [AMF0Vector] = [
        AMF0Vector(name: "number 1.5", bytes: [0x00, 0x3F, 0xF8, 0, 0, 0, 0, 0, 0], value: .number(1.5)),
        AMF0Vector(name: "boolean true", bytes: [0x01, 0x01], value: .boolean(true)),
        AMF0Vector(name: "boolean false", bytes: [0x01, 0x00], value: .boolean(false)),
        AMF0Vector(name: "string", bytes: [0x02, 0x00, 0x04] + Array("live".utf8), value: .string("live")),
        AMF0Vector(name: "empty string", bytes: [0x02, 0x00, 0x00], value: .string("")),
        AMF0Vector(name: "utf8 string", bytes: [0x02, 0x00, 0x02, 0xC3, 0xA9], value: .string("é")),
        AMF0Vector(
            name: "object keeps key order",
            bytes: [0x03] + Wire.key("b") + Wire.amfNumber(2) + Wire.key("a") + [0x05] + Wire.objectEnd,
            value: .object([AMF0Property("b", .number(2)), AMF0Property("a", .null)])
        ),
        AMF0Vector(name: "empty object", bytes: [0x03] + Wire.objectEnd, value: .object([])),
        AMF0Vector(name: "null", bytes: [0x05], value: .null),
        AMF0Vector(name: "undefined", bytes: [0x06], value: .undefined),
        AMF0Vector(name: "reference", bytes: [0x07, 0x01, 0x02], value: .reference(0x0102)),
        AMF0Vector(
            name: "ecma array",
            bytes: [0x08] + Wire.u32(1) + Wire.key("width") + Wire.amfNumber(1280) + Wire.objectEnd,
            value: .ecmaArray([AMF0Property("width", .number(1280))])
        ),
        AMF0Vector(
            name: "strict array",
            bytes: [0x0A] + Wire.u32(2) + Wire.amfNumber(1) + Wire.amfString("x"),
            value: .strictArray([.number(1), .string("x")])
        ),
        AMF0Vector(
            name: "date",
            bytes: [0x0B] + Wire.f64(1_700_000_000_000) + [0xFF, 0xC4],
            value: .date(1_700_000_000_000, timeZone: -60)
        ),
        AMF0Vector(name: "long string", bytes: [0x0C] + Wire.u32(3) + Array("abc".utf8), value: .longString("abc")),
        AMF0Vector(name: "xml document", bytes: [0x0F] + Wire.u32(4) + Array("<a/>".utf8), value: .xmlDocument("<a/>")),
        AMF0Vector(
            name: "typed object",
            bytes: [0x10] + Wire.key("Cls") + Wire.key("k") + [0x01, 0x01] + Wire.objectEnd,
            value: .typedObject(className: "Cls", [AMF0Property("k", .boolean(true))])
        ),
        AMF0Vector(
            name: "nested object",
            bytes: [0x03] + Wire.key("o") + [0x03] + Wire.key("n") + [0x05] + Wire.objectEnd + Wire.objectEnd,
            value: .object([AMF0Property("o", .object([AMF0Property("n", .null)]))])
        ),
    ]
}

struct AMF0DecoderTests {
    @Test(arguments: AMF0Vector.all)
    func decodesVector(_ vector: AMF0Vector) throws {
        var buffer = ByteBuffer(vector.bytes)
        let value = try AMF0Decoder().decode(from: &buffer)
        #expect(value == vector.value)
        #expect(buffer.readableBytes == 0)
    }

    @Test(arguments: AMF0Vector.all)
    func encodesVector(_ vector: AMF0Vector) {
        var buffer = ByteBuffer()
        AMF0Encoder().encode(vector.value, into: &buffer)
        #expect(buffer.bytes == vector.bytes)
    }

    // ECMA arrays are excluded: a missing end marker at the end of input is accepted on purpose
    // (see decoderAcceptsECMAArrayMissingEndAtEndOfInput).
    @Test(arguments: AMF0Vector.all.filter { $0.name != "ecma array" })
    func decoderRejectsEveryTruncation(_ vector: AMF0Vector) {
        for length in 0..<vector.bytes.count {
            var buffer = ByteBuffer(Array(vector.bytes[0..<length]))
            let before = buffer
            #expect(throws: AMF0Error.self) { try AMF0Decoder().decode(from: &buffer) }
            #expect(buffer == before, "a failed decode must not consume input")
        }
    }

    @Test
    func decoderReportsTruncatedNumber() {
        var buffer = ByteBuffer([0x00, 0x3F, 0xF8])
        #expect(throws: AMF0Error.truncated) { try AMF0Decoder().decode(from: &buffer) }
    }

    @Test
    func decoderRejectsStringLongerThanInput() {
        var buffer = ByteBuffer([0x02, 0xFF, 0xFF, 0x41])
        #expect(throws: AMF0Error.lengthExceedsInput(length: 65535, available: 1)) {
            try AMF0Decoder().decode(from: &buffer)
        }
    }

    @Test
    func decoderRejectsHugeStrictArrayCountBeforeLooping() {
        var buffer = ByteBuffer([0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0x05])
        #expect(throws: AMF0Error.lengthExceedsInput(length: 0xFFFF_FFFF, available: 1)) {
            try AMF0Decoder().decode(from: &buffer)
        }
    }

    @Test(arguments: [UInt8(0x04), 0x09, 0x0D, 0x0E, 0x11, 0x12, 0xFF])
    func decoderRejectsUnsupportedMarker(_ marker: UInt8) {
        var buffer = ByteBuffer([marker, 0x00, 0x00, 0x00])
        #expect(throws: AMF0Error.unsupportedMarker(marker)) { try AMF0Decoder().decode(from: &buffer) }
    }

    @Test
    func decoderRejectsObjectsNestedTooDeeply() {
        // 33 nested objects: {"a": {"a": ... }}
        let depth = 33
        var bytes: [UInt8] = []
        for _ in 0..<depth { bytes += [0x03] + Wire.key("a") }
        bytes += [0x05]
        for _ in 0..<depth { bytes += Wire.objectEnd }
        var buffer = ByteBuffer(bytes)
        #expect(throws: AMF0Error.tooDeep(limit: 32)) { try AMF0Decoder().decode(from: &buffer) }

        var shallower = ByteBuffer(Array(bytes.dropFirst(4).dropLast(3)))
        #expect(throws: Never.self) { try AMF0Decoder().decode(from: &shallower) }
    }

    @Test
    func decoderRejectsArraysNestedTooDeeply() {
        var bytes: [UInt8] = []
        for _ in 0..<100_000 { bytes += [0x0A] + Wire.u32(1) }
        bytes += [0x05]
        var buffer = ByteBuffer(bytes)
        #expect(throws: AMF0Error.tooDeep(limit: 8)) { try AMF0Decoder(maxDepth: 8).decode(from: &buffer) }
    }

    @Test
    func decoderRejectsEmptyKeyWithoutObjectEnd() {
        var buffer = ByteBuffer([0x03, 0x00, 0x00, 0x05])
        #expect(throws: AMF0Error.missingObjectEnd(found: 0x05)) { try AMF0Decoder().decode(from: &buffer) }
    }

    @Test
    func decoderAcceptsECMAArrayMissingEndAtEndOfInput() throws {
        var buffer = ByteBuffer([0x08] + Wire.u32(5) + Wire.key("w") + Wire.amfNumber(1))
        let value = try AMF0Decoder().decode(from: &buffer)
        #expect(value == .ecmaArray([AMF0Property("w", .number(1))]))
    }

    @Test
    func decoderRejectsECMAArrayTruncatedInsideProperty() {
        var buffer = ByteBuffer([0x08] + Wire.u32(1) + Wire.key("width") + [0x00, 0x40])
        #expect(throws: AMF0Error.truncated) { try AMF0Decoder().decode(from: &buffer) }
    }

    @Test
    func decoderReplacesInvalidUTF8() throws {
        var buffer = ByteBuffer([0x02, 0x00, 0x02, 0xFF, 0x41])
        let value = try AMF0Decoder().decode(from: &buffer)
        #expect(value == .string("\u{FFFD}A"))
    }

    @Test
    func decodeAllReadsSequence() throws {
        var buffer = ByteBuffer(Wire.amfString("connect") + Wire.amfNumber(1) + [0x05])
        let values = try AMF0Decoder().decodeAll(from: &buffer)
        #expect(values == [.string("connect"), .number(1), .null])
    }

    @Test
    func accessorsReadContainers() {
        let value = AMF0Value.object([AMF0Property("app", .string("live")), AMF0Property("n", .number(3))])
        #expect(value["app"]?.stringValue == "live")
        #expect(value["n"]?.numberValue == 3)
        #expect(value["missing"] == nil)
        #expect(AMF0Value.null["app"] == nil)
        #expect(AMF0Value.longString("x").stringValue == "x")
        #expect(AMF0Value.boolean(true).booleanValue == true)
    }
}
