import Crypto
import NIOCore

/// The Flash "complex" handshake: C1/S1 hide an HMAC-SHA256 digest at an offset derived from the
/// packet itself, and S2/C2 end with a digest keyed by the peer's C1/S1 digest. Not in the public
/// specification; this follows what FMS, Flash Player, librtmp and ffmpeg do.
///
/// A 1536-byte C1/S1 is time (4), version (4), then two 764-byte blocks. Scheme 0 puts the digest
/// block first (bytes 8..<772), scheme 1 second (bytes 772..<1536). A digest block starts with 4
/// offset bytes; the digest sits at block start + 4 + (sum of those bytes) % 728.
enum HandshakeDigest {
    static let packetSize = 1536
    static let digestSize = 32

    /// Shared tail of both keys.
    private static let keyTail: [UInt8] = [
        0xF0, 0xEE, 0xC2, 0x4A, 0x80, 0x68, 0xBE, 0xE8, 0x2E, 0x00, 0xD0, 0xD1, 0x02, 0x9E, 0x7E, 0x57,
        0x6E, 0xEC, 0x5D, 0x2D, 0x29, 0x80, 0x6F, 0xAB, 0x93, 0xB8, 0xE6, 0x36, 0xCF, 0xEB, 0x31, 0xAE,
    ]
    /// "Genuine Adobe Flash Player 001": keys the client's C1 digest.
    static let playerKeyPrefix: [UInt8] = Array("Genuine Adobe Flash Player 001".utf8)
    /// "Genuine Adobe Flash Media Server 001": keys the server's S1 digest.
    static let serverKeyPrefix: [UInt8] = Array("Genuine Adobe Flash Media Server 001".utf8)
    /// The player key with its 32 constant bytes: keys the digest in C2.
    static let playerKey: [UInt8] = playerKeyPrefix + keyTail
    /// The server key with its 32 constant bytes: keys the digest in S2.
    static let serverKey: [UInt8] = serverKeyPrefix + keyTail

    /// The offset of the digest inside a C1/S1 for `scheme` (0 or 1).
    static func digestOffset(in packet: [UInt8], scheme: Int) -> Int {
        let blockStart = scheme == 0 ? 8 : 772
        let sum = packet[blockStart..<(blockStart + 4)].reduce(0) { $0 + Int($1) }
        return blockStart + 4 + sum % 728
    }

    static func hmac(key: [UInt8], _ parts: ArraySlice<UInt8>...) -> [UInt8] {
        var code = HMAC<SHA256>(key: SymmetricKey(data: key))
        for part in parts {
            code.update(data: part)
        }
        return code.finalize().withUnsafeBytes { Array($0) }
    }

    /// The digest of `packet` excluding the 32 bytes at `offset`.
    static func packetDigest(_ packet: [UInt8], offset: Int, key: [UInt8]) -> [UInt8] {
        self.hmac(key: key, packet[0..<offset], packet[(offset + digestSize)...])
    }

    /// The scheme and digest of a C1/S1 whose digest verifies with `key`, or nil (a plain packet).
    static func findDigest(in packet: [UInt8], key: [UInt8]) -> (scheme: Int, digest: [UInt8])? {
        guard packet.count == packetSize else { return nil }
        for scheme in [0, 1] {
            let offset = self.digestOffset(in: packet, scheme: scheme)
            let expected = self.packetDigest(packet, offset: offset, key: key)
            if packet[offset..<(offset + digestSize)].elementsEqual(expected) {
                return (scheme, expected)
            }
        }
        return nil
    }

    /// Writes the digest into a C1/S1 for `scheme`; returns it.
    @discardableResult
    static func sign(_ packet: inout [UInt8], scheme: Int, key: [UInt8]) -> [UInt8] {
        let offset = self.digestOffset(in: packet, scheme: scheme)
        let digest = self.packetDigest(packet, offset: offset, key: key)
        packet.replaceSubrange(offset..<(offset + digestSize), with: digest)
        return digest
    }

    /// Replaces the last 32 bytes of an S2/C2 with HMAC(HMAC(key, peerDigest), first 1504 bytes).
    static func signResponse(_ packet: inout [UInt8], peerDigest: [UInt8], key: [UInt8]) {
        let responseKey = self.hmac(key: key, peerDigest[...])
        let digest = self.hmac(key: responseKey, packet[0..<(packetSize - digestSize)])
        packet.replaceSubrange((packetSize - digestSize)..<packetSize, with: digest)
    }

    /// True if the last 32 bytes of an S2/C2 are the response digest for `peerDigest`.
    static func verifyResponse(_ packet: [UInt8], peerDigest: [UInt8], key: [UInt8]) -> Bool {
        guard packet.count == packetSize else { return false }
        let responseKey = self.hmac(key: key, peerDigest[...])
        let digest = self.hmac(key: responseKey, packet[0..<(packetSize - digestSize)])
        return packet[(packetSize - digestSize)...].elementsEqual(digest)
    }
}

/// Fills handshake packets from an injected generator so tests and fuzz runs replay.
struct HandshakeRandom: Sendable {
    private var generator: any RandomNumberGenerator & Sendable

    init(_ generator: any RandomNumberGenerator & Sendable) {
        self.generator = generator
    }

    mutating func bytes(_ count: Int) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(count)
        while result.count < count {
            var word = self.generator.next()
            for _ in 0..<min(8, count - result.count) {
                result.append(UInt8(truncatingIfNeeded: word))
                word >>= 8
            }
        }
        return result
    }
}
