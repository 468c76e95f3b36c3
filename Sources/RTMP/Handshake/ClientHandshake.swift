import NIOCore

/// The client side of the RTMP handshake (RTMP specification 5.2) as a pure state machine.
///
/// ``start()`` produces C0+C1; ``feed(_:)`` consumes S0+S1+S2, answers `.send(C2)`, then
/// `.completed` on the next call. With `digest: true`, C1 carries a Flash Player digest
/// (scheme 0, as ffmpeg and librtmp send it); if the server answers with a valid S1 digest, S2 is
/// verified and C2 is signed, otherwise the plain handshake is used (C2 echoes S1).
public struct ClientHandshake: Sendable {
    private enum State: Sendable {
        case initial
        case waitingForS0S1S2
        case sentC2
        case completed
    }

    /// The C1 version field sent with the digest handshake (ffmpeg's "9.0.124.2").
    private static let digestVersion: [UInt8] = [0x09, 0x00, 0x7C, 0x02]

    private var state: State = .initial
    private var random: HandshakeRandom
    private let digest: Bool
    private var clientDigest: [UInt8] = []

    /// True when the server answered the digest handshake and both its digests verified.
    public private(set) var serverUsedDigest = false

    /// Creates a handshake; `random` fills C1/C2 (inject a seeded generator in tests).
    public init(random: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator(), digest: Bool = false) {
        self.random = HandshakeRandom(random)
        self.digest = digest
    }

    /// Returns C0+C1 and starts waiting for the server. Call once.
    public mutating func start() -> ByteBuffer {
        var c1: [UInt8]
        if self.digest {
            c1 = [0, 0, 0, 0] + Self.digestVersion + self.random.bytes(HandshakeDigest.packetSize - 8)
            self.clientDigest = HandshakeDigest.sign(&c1, scheme: 0, key: HandshakeDigest.playerKeyPrefix)
        } else {
            c1 = [0, 0, 0, 0, 0, 0, 0, 0] + self.random.bytes(HandshakeDigest.packetSize - 8)
        }
        self.state = .waitingForS0S1S2
        var out = ByteBuffer()
        out.reserveCapacity(1 + HandshakeDigest.packetSize)
        out.writeInteger(ServerHandshake.version)
        out.writeBytes(c1)
        return out
    }

    /// Consumes handshake bytes and returns what to do next. Before ``start()`` it returns
    /// `.send(C0+C1)`. Bytes after S2 stay in the buffer.
    public mutating func feed(_ buffer: inout ByteBuffer) throws(HandshakeError) -> HandshakeAction {
        switch self.state {
        case .initial:
            return .send(self.start())
        case .waitingForS0S1S2:
            guard let version = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else { return .needMoreData }
            guard version == ServerHandshake.version else { throw .unsupportedVersion(version) }
            guard
                buffer.readableBytes >= 1 + 2 * HandshakeDigest.packetSize,
                buffer.readInteger(as: UInt8.self) != nil,
                let s1 = buffer.readBytes(length: HandshakeDigest.packetSize),
                let s2 = buffer.readBytes(length: HandshakeDigest.packetSize)
            else { return .needMoreData }
            let c2 = try self.respond(s1: s1, s2: s2)
            self.state = .sentC2
            var out = ByteBuffer()
            out.writeBytes(c2)
            return .send(out)
        case .sentC2, .completed:
            self.state = .completed
            return .completed
        }
    }

    private mutating func respond(s1: [UInt8], s2: [UInt8]) throws(HandshakeError) -> [UInt8] {
        guard self.digest, let (_, serverDigest) = HandshakeDigest.findDigest(in: s1, key: HandshakeDigest.serverKeyPrefix) else {
            return s1
        }
        guard HandshakeDigest.verifyResponse(s2, peerDigest: self.clientDigest, key: HandshakeDigest.serverKey) else {
            throw .invalidDigest
        }
        self.serverUsedDigest = true
        var c2 = self.random.bytes(HandshakeDigest.packetSize)
        HandshakeDigest.signResponse(&c2, peerDigest: serverDigest, key: HandshakeDigest.playerKey)
        return c2
    }
}
