/// The `code` of an info object (`NetConnection.*`, `NetStream.*`). Any string is allowed;
/// the constants are the codes nginx-rtmp and SRS send, which ffmpeg, OBS and librtmp act on.
public struct StatusCode: RawRepresentable, Sendable, Hashable, ExpressibleByStringLiteral {
    /// The code text.
    public var rawValue: String

    /// Creates a code.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Creates a code from a literal.
    public init(stringLiteral value: String) { self.rawValue = value }

    /// `connect` succeeded.
    public static let connectSuccess: StatusCode = "NetConnection.Connect.Success"
    /// `connect` refused (bad app, authentication failure).
    public static let connectRejected: StatusCode = "NetConnection.Connect.Rejected"
    /// The server closes a connection that did nothing for too long (Flash Media Server's code).
    public static let connectIdleTimeOut: StatusCode = "NetConnection.Connect.IdleTimeOut"
    /// The server closes the connection on purpose (an operator's kick), at level `error`
    /// so that clients print the description (ffmpeg: "Server error: …").
    public static let connectClosed: StatusCode = "NetConnection.Connect.Closed"
    /// Enhanced RTMP v2: the server asks the client to reconnect, to the `tcUrl` of the info
    /// object if it has one (a draining node sends it to publishers that advertised `capsEx`
    /// reconnect).
    public static let connectReconnectRequest: StatusCode = "NetConnection.Connect.ReconnectRequest"
    /// Publishing started; ffmpeg and OBS wait for it before sending media.
    public static let publishStart: StatusCode = "NetStream.Publish.Start"
    /// The stream name is in use or not allowed.
    public static let publishBadName: StatusCode = "NetStream.Publish.BadName"
    /// Publishing was refused for another reason.
    public static let publishDenied: StatusCode = "NetStream.Publish.Denied"
    /// Publishing stopped.
    public static let unpublishSuccess: StatusCode = "NetStream.Unpublish.Success"
    /// Sent before Play.Start: the player resets its playlist.
    public static let playReset: StatusCode = "NetStream.Play.Reset"
    /// Playback started.
    public static let playStart: StatusCode = "NetStream.Play.Start"
    /// Playback stopped.
    public static let playStop: StatusCode = "NetStream.Play.Stop"
    /// No such stream (ffmpeg and librtmp abort playback on it).
    public static let playStreamNotFound: StatusCode = "NetStream.Play.StreamNotFound"
    /// Playback refused.
    public static let playFailed: StatusCode = "NetStream.Play.Failed"
    /// To players: the publisher started (again).
    public static let playPublishNotify: StatusCode = "NetStream.Play.PublishNotify"
    /// To players: the publisher stopped.
    public static let playUnpublishNotify: StatusCode = "NetStream.Play.UnpublishNotify"
    /// Pause accepted.
    public static let pauseNotify: StatusCode = "NetStream.Pause.Notify"
    /// Unpause accepted.
    public static let unpauseNotify: StatusCode = "NetStream.Unpause.Notify"
}
