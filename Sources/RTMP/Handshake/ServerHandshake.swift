import NIOCore

/// The server side of the RTMP handshake (RTMP specification 5.2) as a pure state machine.
///
/// - On C0+C1 it answers S0+S1+S2 at once. If C1 carries a valid Flash Player digest (scheme 0
///   or 1) the answer uses the digest ("complex") handshake, which Flash-era clients and ffmpeg
///   verify; otherwise S1 is random with a zero version and S2 echoes C1.
/// - C0 must be 3; RTMPE and anything else is rejected (nginx-rtmp and SRS do the same).
/// - C2 is consumed without validation: real clients send garbage there.
/// - Bytes after C2 stay in the buffer: they are the first chunks.
public struct ServerHandshake: Sendable {
    /// The only protocol version accepted in C0.
    public static let version: UInt8 = 3

    private enum State: Sendable {
        case waitingForC0C1
        case waitingForC2
        case completed
    }

    private var state: State = .waitingForC0C1
    private var random: HandshakeRandom

    /// True once a C1 with a valid digest was answered with the digest handshake.
    public private(set) var usedDigest = false
    /// The version field (bytes 4..<8) of C1; 0 from plain clients, the Flash version otherwise.
    public private(set) var clientVersion: UInt32?

    /// Creates a handshake; `random` fills S1/S2 (inject a seeded generator in tests).
    public init(random: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()) {
        self.random = HandshakeRandom(random)
    }

    /// Consumes handshake bytes from `buffer` and returns what to do next. Call again after
    /// ``HandshakeAction/send(_:)``: the buffer may already hold C2.
    public mutating func feed(_ buffer: inout ByteBuffer) throws(HandshakeError) -> HandshakeAction {
        switch self.state {
        case .waitingForC0C1:
            // Check C0 as soon as it arrives, so a wrong protocol fails fast.
            guard let version = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else { return .needMoreData }
            guard version == Self.version else { throw .unsupportedVersion(version) }
            guard
                buffer.readableBytes >= 1 + HandshakeDigest.packetSize,
                buffer.readInteger(as: UInt8.self) != nil,
                let c1 = buffer.readBytes(length: HandshakeDigest.packetSize)
            else { return .needMoreData }
            self.state = .waitingForC2
            return .send(self.respond(to: c1))
        case .waitingForC2:
            guard buffer.readableBytes >= HandshakeDigest.packetSize else { return .needMoreData }
            buffer.moveReaderIndex(forwardBy: HandshakeDigest.packetSize)
            self.state = .completed
            return .completed
        case .completed:
            return .completed
        }
    }

    private mutating func respond(to c1: [UInt8]) -> ByteBuffer {
        self.clientVersion = c1[4..<8].reduce(0) { $0 << 8 | UInt32($1) }
        var s1: [UInt8]
        var s2: [UInt8]
        if let (scheme, clientDigest) = HandshakeDigest.findDigest(in: c1, key: HandshakeDigest.playerKeyPrefix) {
            self.usedDigest = true
            // time 0, version 13.14.10.13 (what nginx-rtmp announces), random, digest in the client's scheme.
            s1 = [0, 0, 0, 0, 0x0D, 0x0E, 0x0A, 0x0D] + self.random.bytes(HandshakeDigest.packetSize - 8)
            HandshakeDigest.sign(&s1, scheme: scheme, key: HandshakeDigest.serverKeyPrefix)
            s2 = self.random.bytes(HandshakeDigest.packetSize)
            HandshakeDigest.signResponse(&s2, peerDigest: clientDigest, key: HandshakeDigest.serverKey)
        } else {
            s1 = [0, 0, 0, 0, 0, 0, 0, 0] + self.random.bytes(HandshakeDigest.packetSize - 8)
            s2 = c1
        }
        var out = ByteBuffer()
        out.reserveCapacity(1 + 2 * HandshakeDigest.packetSize)
        out.writeInteger(Self.version)
        out.writeBytes(s1)
        out.writeBytes(s2)
        return out
    }
}
