import Foundation

/// The tokens one application (or every application, `*`) requires: for which actions, and
/// the secrets and keys that sign them. A request of a required action without a valid
/// token is refused (denied).
public struct ApplicationTokens: Sendable {
    /// The actions that need a token (both by default).
    public var actions: Set<TokenAction>
    /// The secret of plain HMAC tokens: `?token=<hex HMAC-SHA256 of "action:app/name:expires">&expires=<unix seconds>`.
    public var hmacSecret: String?
    /// The shared secret of HS256 JWTs: at least 32 bytes (RFC 7518 3.2; the configuration
    /// refuses a shorter one).
    public var jwtSecret: String?
    /// A JWKS document (RS256, ES256 and other public keys, by `kid`).
    public var jwks: String?
    /// Where an identity provider publishes its JWKS (`RemoteJWKS`): fetched, refreshed, and
    /// asked again when a token names a key it lacks.
    public var jwksURL: String?
    /// What happens when a live session's token expires: it is kicked (the default) or kept.
    public var kickOnExpiry: Bool

    public init(actions: Set<TokenAction> = Set(TokenAction.allCases), hmacSecret: String? = nil, jwtSecret: String? = nil, jwks: String? = nil, jwksURL: String? = nil, kickOnExpiry: Bool = true) {
        self.jwksURL = jwksURL
        self.actions = actions
        self.hmacSecret = hmacSecret
        self.jwtSecret = jwtSecret
        self.jwks = jwks
        self.kickOnExpiry = kickOnExpiry
    }
}
