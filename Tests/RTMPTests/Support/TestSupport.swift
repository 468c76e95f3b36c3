@testable import AMF0
import NIOCore

/// A deterministic generator (SplitMix64) so handshake tests replay.
struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) {
        self.state = seed
    }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Byte-building helpers for hand-written wire vectors (independent of the encoders under test).
enum Wire {
    static func u16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
    static func u24(_ value: UInt32) -> [UInt8] { [UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)] }
    static func u32(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)] }
    static func u32le(_ value: UInt32) -> [UInt8] { Array(self.u32(value).reversed()) }
    static func f64(_ value: Double) -> [UInt8] {
        let bits = value.bitPattern
        return (0..<8).map { UInt8((bits >> (56 - 8 * UInt64($0))) & 0xFF) }
    }
    /// An AMF0 string value: marker 0x02, length, UTF-8 bytes.
    static func amfString(_ text: String) -> [UInt8] { [0x02] + self.u16(UInt16(text.utf8.count)) + Array(text.utf8) }
    /// An AMF0 number value.
    static func amfNumber(_ value: Double) -> [UInt8] { [0x00] + self.f64(value) }
    /// An AMF0 property key (no marker).
    static func key(_ text: String) -> [UInt8] { self.u16(UInt16(text.utf8.count)) + Array(text.utf8) }
    /// The object-end sequence.
    static let objectEnd: [UInt8] = [0x00, 0x00, 0x09]

    /// A payload of `count` bytes counting up from `start` (wrapping).
    static func pattern(_ count: Int, start: UInt8 = 0) -> [UInt8] { (0..<count).map { start &+ UInt8(truncatingIfNeeded: $0) } }
}

extension ByteBuffer {
    init(_ bytes: [UInt8]) {
        self.init(bytes: bytes)
    }

    var bytes: [UInt8] { self.getBytes(at: self.readerIndex, length: self.readableBytes) ?? [] }
}
