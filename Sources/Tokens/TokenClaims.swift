import JWTKit

/// The claims a play or publish JWT carries: `exp` (required) and `nbf`; and, to narrow
/// it, `actions` (`["play"]`, `["publish"]`), `app` and `name` (a stream of that
/// application, or that one stream), as MediaMTX's JWT permissions narrow a token to an
/// action and a path. A claim that is absent does not narrow.
struct TokenClaims: JWTPayload, Equatable {
    var exp: ExpirationClaim
    var nbf: NotBeforeClaim?
    var actions: [String]?
    var app: String?
    var name: String?

    func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
        try nbf?.verifyNotBefore()
    }
}
