import NIOCore

/// What a handshake state machine asks its driver to do after ``ServerHandshake/feed(_:)`` or
/// ``ClientHandshake/feed(_:)``. Drivers call `feed` in a loop until it returns
/// ``needMoreData`` or ``completed``.
public enum HandshakeAction: Equatable, Sendable {
    /// Wait for more bytes, then feed again.
    case needMoreData
    /// Write these bytes to the peer, then feed again (the buffer may already hold the next packet).
    case send(ByteBuffer)
    /// The handshake is over; any bytes left in the buffer are the first chunks.
    case completed
}
