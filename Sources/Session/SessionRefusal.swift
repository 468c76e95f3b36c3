/// Why a publish or play was refused, in terms every protocol can answer: RTMP maps it to
/// an `onStatus` code (`NetStream.Publish.BadName`, `…Denied`, `NetStream.Play.StreamNotFound`),
/// HTTP to a status (404, 403, 503), SRT to a rejection reason.
public struct SessionRefusal: Sendable, Hashable, Error, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// The name cannot be used: taken by another publisher, or not a stream at all.
        case badName
        /// Not allowed: a wrong or revoked key, a missing token.
        case denied
        /// No such stream is live (play).
        case notFound
        /// Allowed, but not now: a capacity is reached; try again later.
        case unavailable
    }

    public var kind: Kind
    /// Where the client should go instead (a hook's `redirect`): a server's base URL,
    /// `rtmp://other:1935` for a publisher, `http://other:8080` for a player. HTTP answers
    /// 302 to it with the request's path; an Enhanced RTMP v2 publisher is asked to reconnect
    /// there; other clients are told it in the refusal.
    public var redirect: String?
    /// For the client and the log; never carries a secret.
    public var description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }

    public static func badName(_ description: String) -> SessionRefusal { .init(.badName, description) }
    public static func denied(_ description: String) -> SessionRefusal { .init(.denied, description) }
    public static func notFound(_ description: String) -> SessionRefusal { .init(.notFound, description) }
    public static func unavailable(_ description: String) -> SessionRefusal { .init(.unavailable, description) }
    /// Not here: go to `base`.
    public static func redirected(to base: String) -> SessionRefusal {
        var refusal = SessionRefusal(.unavailable, "go to \(base.prefix(256))")
        refusal.redirect = base
        return refusal
    }
}
