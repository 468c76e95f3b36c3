import Foundation

/// What the verifier says of a request's token.
public enum TokenVerdict: Sendable, Equatable {
    /// The application does not require a token for this action.
    case notRequired
    /// Valid until `expires`; `kick` says whether the session ends then.
    case valid(expires: Date, kick: Bool)
    /// Refused, with the reason logged (the client is told only that its token was refused).
    case refused(String)
    /// Not decided: the keys that would verify it cannot be had now (a JWKS URL that is
    /// down); the client is told to try again later, the log says why.
    case unavailable(String)
}
