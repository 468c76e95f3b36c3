import NIOCore

/// One side of the RTMP handshake as a pure state machine (``ServerHandshake``,
/// ``ClientHandshake``), so one NIO handler can drive either.
public protocol HandshakeStateMachine {
    /// The bytes this side sends first, before reading anything (C0+C1 for a client), or
    /// nil when it waits for the peer (a server).
    mutating func opening() -> ByteBuffer?
    /// Consumes handshake bytes; bytes after the handshake stay in `buffer`.
    mutating func feed(_ buffer: inout ByteBuffer) throws(HandshakeError) -> HandshakeAction
}

extension ServerHandshake: HandshakeStateMachine {
    public mutating func opening() -> ByteBuffer? { nil }
}

extension ClientHandshake: HandshakeStateMachine {
    public mutating func opening() -> ByteBuffer? { start() }
}
