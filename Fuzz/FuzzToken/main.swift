// libFuzzer target: a play or publish token from a hostile query (TokenVerifier, with
// jwt-kit underneath). The input's first byte picks the action and the application; the rest
// is the query (`token=…&expires=…`, `jwt=…`). The verifier takes an HS256 secret, an HMAC
// secret and a JWKS of one RSA and one P-256 public key, as a node configured with all three.
//
// Checked: nothing the query holds crashes the process (jwt-kit parses base64url, JSON,
// signatures and claims from it); a refusal's reason, which is logged, stays short; a token
// is valid only for an application that requires tokens, and never past its expiry; what is
// decided without waiting (SRT's handshake) is what the full check decides.
import CLibFuzzer
import Dispatch
import Foundation
import Glibc
import Media
import Session
import Tokens

let jwks = #"""
{"keys": [{"kty": "RSA", "kid": "rsa-1", "alg": "RS256", "use": "sig", "n": "kW50tBRSYZz5qYJE_mMLQY7W8nKEEr3Tm94GIe3FoOzfSDf06HO3dfJTlB98ZITu9yh9-sSrpFNXqWVHY_ZvtI5FTPt0dBRWU02_5_nnwo58Nk6SqFCKrW9UbIe3MZJUnQ5tH1ib12iuMkTYqFBFZG_oANuGJJQl5yneVv_LO6XjKLl6gc379M3uBXb8dNh-zpJR4Uh815cX2MUD3XsJNqSa-ZIbLauvEZyEN03qhKZj1QbgmhC2FvcIIyHzG7YNi_aCBWYM3aLjI-2vrFNjDymwQYhS7yZaG6R4MF8pQTaBquJcOA_BcjHvaGm2IgEPVLCZaNFlOSqC7P2fGjt0TQ", "e": "AQAB"}, {"kty": "EC", "kid": "ec-1", "alg": "ES256", "use": "sig", "crv": "P-256", "x": "wcjIeRYQdA-0TonhcCH9Bzkjat2DZHWfdy6sXrmbkUk", "y": "NaawKrnELUUxg-I9zYwjGLH6I22dC8Wn9mKDAsbfCcw"}]}
"""#

/// Made once, before the fuzzing starts (its keys' allocations are not an input's): the
/// keys parse the same for every input.
nonisolated(unsafe) var verifier: TokenVerifier?

func makeVerifier() -> TokenVerifier {
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var made: TokenVerifier?
    Task {
        made = try? await TokenVerifier.make([
            "live": ApplicationTokens(hmacSecret: "fuzz-hmac-secret-0123", jwtSecret: "fuzz-jwt-secret-0123456789abcdef-0123", jwks: jwks),
        ])
        done.signal()
    }
    done.wait()
    guard let made else { fatalError("the fuzz target's keys do not parse") }
    return made
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzToken(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let action: TokenAction = bytes[0] & 1 == 0 ? .play : .publish
    let app = bytes[0] & 2 == 0 ? "live" : "open"
    let query = StreamQuery(String(decoding: bytes.dropFirst(), as: UTF8.self))
    let path = try! StreamPath(app: app, name: "cam")  // literals, valid
    guard let checking = verifier else { return 0 }
    let now = Date()
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var verdict: TokenVerdict = .notRequired
    Task {
        verdict = await checking.verify(action, path: path, query: query, now: now)
        done.signal()
    }
    done.wait()
    // What SRT's handshake decides without waiting must be what the full check decides.
    if let atOnce = checking.verdictWithoutWaiting(action, path: path, query: query, now: now) {
        precondition(atOnce == verdict, "decided without waiting as \(atOnce), and in full as \(verdict)")
    }
    switch verdict {
    case .notRequired:
        precondition(app == "open", "a token was not required on an application that requires one")
    case .valid(let expires, _):
        precondition(app == "live", "a token was valid on an application without tokens")
        precondition(expires > Date(), "a token valid past its expiry")
    case .refused(let reason):
        precondition(reason.utf8.count <= 300, "a refusal reason of \(reason.utf8.count) bytes")
    case .unavailable(let reason):
        // Only a JWKS URL's keys can be unavailable, and this verifier has none.
        preconditionFailure("unavailable without a JWKS URL: \(reason)")
    }
    return 0
}

verifier = makeVerifier()
var arguments = CommandLine.argc
var argumentVector: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&arguments, &argumentVector) { data, size in fuzzToken(data, size) })
