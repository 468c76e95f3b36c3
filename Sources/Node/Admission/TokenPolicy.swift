import Media
import Session
import Tokens

/// Signed URLs (`tokens`): a publish or play of an application that requires a token needs
/// a valid one in its query (`token=…`, or `jwt=…`), a JWT or a plain HMAC token
/// (`TokenVerifier`), whatever the protocol: RTMP (on the stream name or on `connect`'s
/// application), HTTP-FLV and HLS (whose playlists carry the query onward). A refusal tells
/// the client only that its token was refused (denied); the log says why. A valid token's
/// expiry is handed to `TokenExpiry`, which kicks the session then unless the application
/// keeps it.
struct TokenPolicy: AdmissionPolicy {
    let verifier: TokenVerifier
    let expiry: TokenExpiry

    func check(_ request: PublishRequest) async -> PolicyRefusal? {
        decide(await verifier.verify(.publish, path: request.path, query: request.query), session: request.sessionID.rawValue)
    }

    func check(_ request: PlayRequest) async -> PolicyRefusal? {
        decide(await verifier.verify(.play, path: request.path.primary.stream, query: request.query), session: request.sessionID.rawValue)
    }

    /// No token, an HMAC token that does not match or has expired, a JWT the application has
    /// no key for: what needs no key collection's or JWKS URL's answer.
    func refusalWithoutWaiting(_ request: PublishRequest) -> PolicyRefusal? {
        refusal(verifier.verdictWithoutWaiting(.publish, path: request.path, query: request.query))
    }

    func refusalWithoutWaiting(_ request: PlayRequest) -> PolicyRefusal? {
        refusal(verifier.verdictWithoutWaiting(.play, path: request.path.primary.stream, query: request.query))
    }

    /// The full verification (a JWT's signature, its JWKS fetched if need be), which holds
    /// nothing: a valid token's expiry is watched only for the session `check` admits.
    func refusalWithoutSideEffects(_ request: PublishRequest) async -> PolicyRefusal? {
        refusal(await verifier.verify(.publish, path: request.path, query: request.query))
    }

    func refusalWithoutSideEffects(_ request: PlayRequest) async -> PolicyRefusal? {
        refusal(await verifier.verify(.play, path: request.path.primary.stream, query: request.query))
    }

    /// A JWT to verify.
    func asksWithoutSideEffects(_ request: PublishRequest) -> Bool {
        verifier.verdictWithoutWaiting(.publish, path: request.path, query: request.query) == nil
    }

    func asksWithoutSideEffects(_ request: PlayRequest) -> Bool {
        verifier.verdictWithoutWaiting(.play, path: request.path.primary.stream, query: request.query) == nil
    }

    /// Only refusals: a valid token's expiry is watched for the session `check` admits.
    private func refusal(_ verdict: TokenVerdict?) -> PolicyRefusal? {
        guard let verdict else { return nil }
        switch verdict {
        case .refused, .unavailable: return decide(verdict, session: "")
        case .notRequired, .valid: return nil
        }
    }

    private func decide(_ verdict: TokenVerdict, session: String) -> PolicyRefusal? {
        switch verdict {
        case .notRequired:
            return nil
        case .valid(let expires, let kick):
            if kick { expiry.expect(session, at: expires) }
            return nil
        case .refused(let why):
            return PolicyRefusal(.denied("token refused"), metric: "token", logged: "token: \(why)")
        case .unavailable(let why):
            return PolicyRefusal(.unavailable("token keys unavailable; try again later"), metric: "token_keys_unavailable", logged: "token: \(why)")
        }
    }
}
