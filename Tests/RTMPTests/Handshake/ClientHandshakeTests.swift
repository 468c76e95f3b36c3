import NIOCore
import Testing

@testable import RTMP

struct ClientHandshakeTests {
    /// Runs a client and a server state machine against each other in memory.
    private func run(client: inout ClientHandshake, server: inout ServerHandshake, trailing: [UInt8]) throws
        -> (toServer: ByteBuffer, toClient: ByteBuffer)
    {
        var toServer = ByteBuffer()
        var toClient = ByteBuffer()
        var clientDone = false
        var serverDone = false
        var rounds = 0
        var clientSends = 0
        while !(clientDone && serverDone) {
            rounds += 1
            guard rounds < 10 else {
                Issue.record("handshake did not finish")
                break
            }
            clientLoop: while !clientDone {
                switch try client.feed(&toClient) {
                case .needMoreData: break clientLoop
                case .send(var bytes):
                    toServer.writeBuffer(&bytes)
                    clientSends += 1
                    if clientSends == 2 {
                        // C2 followed by the first chunk bytes, in the same write.
                        toServer.writeBytes(trailing)
                    }
                case .completed: clientDone = true
                }
            }
            serverLoop: while !serverDone {
                switch try server.feed(&toServer) {
                case .needMoreData: break serverLoop
                case .send(var bytes): toClient.writeBuffer(&bytes)
                case .completed: serverDone = true
                }
            }
        }
        return (toServer, toClient)
    }

    @Test(arguments: [false, true])
    func clientAndServerCompleteAgainstEachOther(digest: Bool) throws {
        var client = ClientHandshake(random: SeededGenerator(seed: 10), digest: digest)
        var server = ServerHandshake(random: SeededGenerator(seed: 11))
        let (toServer, toClient) = try self.run(client: &client, server: &server, trailing: [0x02, 0x00])
        #expect(server.usedDigest == digest)
        #expect(client.serverUsedDigest == digest)
        #expect(toServer.bytes == [0x02, 0x00], "bytes after C2 stay for the chunk decoder")
        #expect(toClient.readableBytes == 0)
    }

    @Test
    func clientStartsWithC0C1() {
        var client = ClientHandshake(random: SeededGenerator(seed: 1))
        let c0c1 = client.start()
        #expect(c0c1.readableBytes == 1537)
        #expect(c0c1.getInteger(at: 0, as: UInt8.self) == 3)
    }

    @Test
    func digestClientSignsC1() {
        var client = ClientHandshake(random: SeededGenerator(seed: 1), digest: true)
        let c1 = Array(client.start().bytes.dropFirst())
        #expect(HandshakeFixtures.verifies(c1, scheme: 0, key: HandshakeFixtures.playerKey30))
    }

    @Test
    func clientRejectsWrongServerVersion() {
        var client = ClientHandshake(random: SeededGenerator(seed: 1))
        _ = client.start()
        var buffer = ByteBuffer([6])
        #expect(throws: HandshakeError.unsupportedVersion(6)) { try client.feed(&buffer) }
    }

    @Test
    func digestClientRejectsBadS2Digest() throws {
        var client = ClientHandshake(random: SeededGenerator(seed: 1), digest: true)
        var toServer = client.start()
        var server = ServerHandshake(random: SeededGenerator(seed: 2))
        guard case .send(let response) = try server.feed(&toServer) else {
            Issue.record("expected S0+S1+S2")
            return
        }
        var bytes = response.bytes
        bytes[bytes.count - 1] ^= 0x01
        var buffer = ByteBuffer(bytes)
        #expect(throws: HandshakeError.invalidDigest) { try client.feed(&buffer) }
    }
}
