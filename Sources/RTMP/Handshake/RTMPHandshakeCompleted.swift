/// The user inbound event ``ServerHandshakeHandler`` and ``ClientHandshakeHandler`` fire when the
/// handshake is over, just before they forward any bytes that followed it and remove themselves.
public struct RTMPHandshakeCompleted: Sendable, Equatable {
    /// Creates the event.
    public init() {}
}
