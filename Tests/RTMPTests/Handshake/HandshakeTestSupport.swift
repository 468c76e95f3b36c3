import NIOCore

@testable import RTMP

/// Builds handshake packets with the layout computed here, independently of the code under test;
/// only the HMAC-SHA256 primitive is shared (and checked against RFC 4231 in `HandshakeDigestTests`).
enum HandshakeFixtures {
    static let playerKey30 = Array("Genuine Adobe Flash Player 001".utf8)
    static let serverKey36 = Array("Genuine Adobe Flash Media Server 001".utf8)
    static let tail: [UInt8] = [
        0xF0, 0xEE, 0xC2, 0x4A, 0x80, 0x68, 0xBE, 0xE8, 0x2E, 0x00, 0xD0, 0xD1, 0x02, 0x9E, 0x7E, 0x57,
        0x6E, 0xEC, 0x5D, 0x2D, 0x29, 0x80, 0x6F, 0xAB, 0x93, 0xB8, 0xE6, 0x36, 0xCF, 0xEB, 0x31, 0xAE,
    ]

    static func offset(_ packet: [UInt8], scheme: Int) -> Int {
        let base = scheme == 0 ? 8 : 772
        let sum = Int(packet[base]) + Int(packet[base + 1]) + Int(packet[base + 2]) + Int(packet[base + 3])
        return base + 4 + sum % 728
    }

    static func hmac(_ key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        HandshakeDigest.hmac(key: key, message[...])
    }

    /// A C1 carrying a valid Flash Player digest in `scheme`.
    static func digestC1(scheme: Int, seed: UInt64) -> (c1: [UInt8], digest: [UInt8]) {
        var generator = SeededGenerator(seed: seed)
        var c1 = [0, 0, 0, 0, 0x80, 0x00, 0x07, 0x02] + (0..<1528).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let at = self.offset(c1, scheme: scheme)
        let digest = self.hmac(self.playerKey30, Array(c1[0..<at]) + Array(c1[(at + 32)...]))
        c1.replaceSubrange(at..<(at + 32), with: digest)
        return (c1, digest)
    }

    /// A plain C1: zero time and version, then random bytes.
    static func plainC1(seed: UInt64) -> [UInt8] {
        var generator = SeededGenerator(seed: seed)
        return [0, 0, 0, 0, 0, 0, 0, 0] + (0..<1528).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// True if the packet's digest at `scheme` verifies with `key`.
    static func verifies(_ packet: [UInt8], scheme: Int, key: [UInt8]) -> Bool {
        let at = self.offset(packet, scheme: scheme)
        let expected = self.hmac(key, Array(packet[0..<at]) + Array(packet[(at + 32)...]))
        return Array(packet[at..<(at + 32)]) == expected
    }

    /// True if the last 32 bytes of a response packet are HMAC(HMAC(key, peerDigest), first 1504 bytes).
    static func responseVerifies(_ packet: [UInt8], peerDigest: [UInt8], key: [UInt8]) -> Bool {
        let responseKey = self.hmac(key, peerDigest)
        return Array(packet[1504...]) == self.hmac(responseKey, Array(packet[0..<1504]))
    }
}
