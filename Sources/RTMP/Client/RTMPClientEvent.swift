import Media

/// What an RTMP client connection reports, on its event loop, in this order: at most one
/// of `started` and `refused`; frames only after `started`; `ended` last, exactly once.
public enum RTMPClientEvent: Sendable {
    /// The server accepted: `NetStream.Play.Start` or `NetStream.Publish.Start`.
    case started
    /// Frames of the stream being played, with the server's timestamps: those one read
    /// from the socket brought, in order (a server writes a burst at a time).
    case frames([MediaFrame])
    /// The server refused the play or publish (its status code: `NetStream.Play.StreamNotFound`,
    /// `NetStream.Publish.BadName`, `_error` …); the connection closes.
    case refused(String)
    /// Enhanced RTMP v2: the server asks the client to reconnect, to `tcUrl` (a server URL
    /// without the stream name) or, nil, to the URL it used. Only a client that advertised
    /// the capability gets one (`RTMPClient.connect(…, acceptsReconnectRequests: true)`);
    /// the connection stays up until the client closes it.
    case reconnectRequested(tcUrl: String?)
    /// The socket takes writes again after it was full (a publisher's cue to send more).
    case writable
    /// The connection ended: the stream ended on the server (`NetStream.Play.UnpublishNotify`,
    /// `NetStream.Play.Stop`), the server closed, or a protocol error (the reason says).
    case ended(reason: String, clean: Bool)
}
