import NIOCore
import Testing

@testable import RTMP

struct ServerHandshakeTests {
    @Test
    func plainHandshakeEchoesC1AndKeepsBytesAfterC2() throws {
        var server = ServerHandshake(random: SeededGenerator(seed: 1))
        let c1 = HandshakeFixtures.plainC1(seed: 9)
        var buffer = ByteBuffer([3] + c1)
        guard case .send(let response) = try server.feed(&buffer) else {
            Issue.record("expected S0+S1+S2")
            return
        }
        let bytes = response.bytes
        #expect(bytes.count == 1 + 1536 + 1536)
        #expect(bytes[0] == 3)
        #expect(Array(bytes[1..<9]) == [0, 0, 0, 0, 0, 0, 0, 0])
        #expect(Array(bytes[1537...]) == c1, "plain S2 echoes C1")
        #expect(server.usedDigest == false)
        #expect(try server.feed(&buffer) == .needMoreData)

        buffer.writeBytes(Wire.pattern(1536) + [0x03, 0xAA, 0xBB])
        #expect(try server.feed(&buffer) == .completed)
        #expect(buffer.bytes == [0x03, 0xAA, 0xBB])
    }

    @Test(arguments: [0, 1])
    func digestHandshakeSignsS1AndS2(scheme: Int) throws {
        var server = ServerHandshake(random: SeededGenerator(seed: 2))
        let (c1, clientDigest) = HandshakeFixtures.digestC1(scheme: scheme, seed: 77)
        var buffer = ByteBuffer([3] + c1)
        guard case .send(let response) = try server.feed(&buffer) else {
            Issue.record("expected S0+S1+S2")
            return
        }
        let bytes = response.bytes
        let s1 = Array(bytes[1..<1537])
        let s2 = Array(bytes[1537...])
        #expect(server.usedDigest)
        #expect(server.clientVersion == 0x8000_0702)
        #expect(HandshakeFixtures.verifies(s1, scheme: scheme, key: HandshakeFixtures.serverKey36))
        #expect(s1[4..<8].contains { $0 != 0 }, "a digest S1 announces a non-zero version")
        #expect(
            HandshakeFixtures.responseVerifies(
                s2, peerDigest: clientDigest, key: HandshakeFixtures.serverKey36 + HandshakeFixtures.tail
            )
        )
    }

    @Test
    func c1WithCorruptedDigestGetsPlainHandshake() throws {
        var (c1, _) = HandshakeFixtures.digestC1(scheme: 0, seed: 5)
        let at = HandshakeFixtures.offset(c1, scheme: 0)
        c1[at] ^= 0xFF
        var server = ServerHandshake(random: SeededGenerator(seed: 3))
        var buffer = ByteBuffer([3] + c1)
        guard case .send(let response) = try server.feed(&buffer) else {
            Issue.record("expected S0+S1+S2")
            return
        }
        #expect(server.usedDigest == false)
        #expect(Array(response.bytes[1537...]) == c1)
    }

    @Test(arguments: [UInt8(0), 6, 8, 0x16, 0x47])
    func serverRejectsWrongVersionOnFirstByte(_ version: UInt8) {
        var server = ServerHandshake(random: SeededGenerator(seed: 1))
        var buffer = ByteBuffer([version])
        #expect(throws: HandshakeError.unsupportedVersion(version)) { try server.feed(&buffer) }
    }

    @Test
    func serverWorksOneByteAtATime() throws {
        var server = ServerHandshake(random: SeededGenerator(seed: 1))
        let input = [3] + HandshakeFixtures.plainC1(seed: 4) + Wire.pattern(1536)
        var buffer = ByteBuffer()
        var sent = 0
        var completed = false
        for byte in input {
            buffer.writeInteger(byte)
            loop: while true {
                switch try server.feed(&buffer) {
                case .needMoreData: break loop
                case .send(let bytes): sent += bytes.readableBytes
                case .completed:
                    completed = true
                    break loop
                }
            }
        }
        #expect(sent == 3073)
        #expect(completed)
        #expect(buffer.readableBytes == 0)
    }

    @Test
    func hmacPrimitiveMatchesRFC4231() {
        // RFC 4231 test case 2.
        let digest = HandshakeDigest.hmac(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8)[...])
        let hex = digest.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        #expect(hex == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }
}
