import Crypto
import Foundation
import JWTKit
import Media
import Session

/// Checks play and publish tokens, per application, for every protocol: the query's
/// `token` (or `jwt`) is a JWT (three dot-separated parts) or a plain HMAC token with its
/// `expires`. Build it once (`make`, which parses the keys); `verify` never blocks.
public final class TokenVerifier: Sendable {
    private struct Application: Sendable {
        var rules: ApplicationTokens
        var keys: JWTKeyCollection?
        /// The application's JWKS URL, whose keys (with the application's own) replace `keys`.
        var remote: RemoteJWKS?
        /// The `kid`s of its JWKS file.
        var kids: Set<String> = []
    }

    private let applications: [String: Application]

    /// The key whose rules apply to applications without their own.
    public static let everyApplication = "*"

    /// The longest token read; longer ones are refused unread.
    public static let maxTokenBytes = 8192

    private init(applications: [String: Application], remoteFailures: [String]) {
        self.applications = applications
        self.remoteFailures = remoteFailures
    }

    /// Why the JWKS URLs that could not be fetched when the verifier was made could not be
    /// (they are asked again; tokens only they could verify are unavailable until then).
    public let remoteFailures: [String]

    /// Parses every application's keys and fetches its JWKS URL. Throws a message naming the
    /// application when a JWKS document or a key cannot be used, or, with `requireRemoteKeys`
    /// (`--check-config`), when a JWKS URL cannot be fetched.
    public static func make(_ rules: [String: ApplicationTokens], requireRemoteKeys: Bool = false) async throws(TokenConfigurationError) -> TokenVerifier {
        var applications: [String: Application] = [:]
        var failures: [String] = []
        for (app, rule) in rules {
            var remote: RemoteJWKS?
            if let url = rule.jwksURL {
                let fetcher = RemoteJWKS(url: url, jwtSecret: rule.jwtSecret, jwksFile: rule.jwks)
                do {
                    try await fetcher.fetchNow()
                } catch {
                    if requireRemoteKeys { throw TokenConfigurationError(application: app, reason: "jwksURL: \(error.reason)") }
                    failures.append("tokens.\(app).jwksURL: \(error.reason)")
                }
                remote = fetcher
            }
            var keys: JWTKeyCollection?
            if rule.jwtSecret != nil || rule.jwks != nil {
                let collection = JWTKeyCollection()
                if let secret = rule.jwtSecret {
                    await collection.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
                }
                if let jwks = rule.jwks {
                    do {
                        try await collection.add(jwksJSON: jwks)
                    } catch {
                        throw TokenConfigurationError(application: app, reason: "its JWKS cannot be used: \(error)")
                    }
                }
                keys = collection
            }
            applications[app] = Application(rules: rule, keys: keys, remote: remote, kids: rule.jwks.map(kids(ofJWKS:)) ?? [])
        }
        return TokenVerifier(applications: applications, remoteFailures: failures)
    }

    public var isEmpty: Bool { applications.isEmpty }

    public func verify(_ action: TokenAction, path: StreamPath, query: StreamQuery, now: Date = Date()) async -> TokenVerdict {
        let token: String
        let application: Application
        switch read(action, path: path, query: query, now: now) {
        case .decided(let verdict): return verdict
        case .jwt(let jwt, let of): (token, application) = (jwt, of)
        }
        let claims: TokenClaims
        switch await Self.verifyJWT(token, application) {
        case .success(let verified): claims = verified
        case .failure(let refusal): return refusal.verdict
        }
        if let actions = claims.actions, !actions.contains(action.rawValue) {
            return .refused("the JWT allows \(actions.joined(separator: ", ")), not \(action.rawValue)")
        }
        if let app = claims.app, app != path.app { return .refused("the JWT is for application \(app.prefix(64))") }
        if let name = claims.name, name != path.name { return .refused("the JWT is for stream \(name.prefix(64))") }
        return .valid(expires: claims.exp.value, kick: application.rules.kickOnExpiry)
    }

    /// `verify`'s verdict where it needs no key collection or JWKS URL (no token, an HMAC
    /// token, a JWT the application has no key for); nil for a JWT to verify. Never waits.
    public func verdictWithoutWaiting(_ action: TokenAction, path: StreamPath, query: StreamQuery, now: Date = Date()) -> TokenVerdict? {
        switch read(action, path: path, query: query, now: now) {
        case .decided(let verdict):
            return verdict
        case .jwt(let token, let application):
            guard application.remote == nil else { return nil }
            return Self.refusalBeforeVerifying(kid: Self.kid(ofJWT: token), application)
        }
    }

    /// Without a JWKS URL: the refusal of a JWT that the application's own keys cannot
    /// verify whatever its signature (no keys, or a `kid` its JWKS lacks), or nil.
    private static func refusalBeforeVerifying(kid: String?, _ application: Application) -> TokenVerdict? {
        guard application.keys != nil else { return .refused("a JWT, and the application takes none") }
        if let kid, !application.kids.contains(kid) {
            return .refused("the JWT's kid \(kid.prefix(64)) is not in the JWKS")
        }
        return nil
    }

    /// What a request's token is, read: a verdict already, or a JWT to verify.
    private enum Reading {
        case decided(TokenVerdict)
        case jwt(String, Application)
    }

    private func read(_ action: TokenAction, path: StreamPath, query: StreamQuery, now: Date) -> Reading {
        guard let application = applications[path.app] ?? applications[Self.everyApplication],
              application.rules.actions.contains(action) else { return .decided(.notRequired) }
        guard let token = query.value(for: "token") ?? query.value(for: "jwt"), !token.isEmpty else {
            return .decided(.refused("no token"))
        }
        guard token.utf8.count <= Self.maxTokenBytes else { return .decided(.refused("a token of \(token.utf8.count) bytes")) }
        if token.split(separator: ".", omittingEmptySubsequences: false).count == 3 {
            return .jwt(token, application)
        }
        return .decided(Self.hmacVerdict(token, action, path: path, query: query, application: application, now: now))
    }

    private static func hmacVerdict(_ token: String, _ action: TokenAction, path: StreamPath, query: StreamQuery, application: Application, now: Date) -> TokenVerdict {
        let kick = application.rules.kickOnExpiry
        guard let secret = application.rules.hmacSecret else { return .refused("an HMAC token, and the application takes none") }
        guard let expiresText = query.value(for: "expires"), let expiresSeconds = Int64(expiresText) else {
            return .refused("an HMAC token without a valid expires")
        }
        let expires = Date(timeIntervalSince1970: TimeInterval(expiresSeconds))
        guard expires > now else { return .refused("the HMAC token expired") }
        // swift-crypto compares the codes in constant time: the secret must not leak through timing.
        guard let code = Self.bytes(hex: token),
              HMAC<SHA256>.isValidAuthenticationCode(code, authenticating: Self.message(action, path: path, expires: expiresSeconds), using: SymmetricKey(data: Data(secret.utf8)))
        else {
            return .refused("the HMAC token does not match")
        }
        return .valid(expires: expires, kick: kick)
    }

    /// A JWT's claims, or the verdict that refuses it. With a JWKS URL, a key the fetched
    /// document lacks has the URL asked again (a rotation) before the token is refused.
    private static func verifyJWT(_ token: String, _ application: Application) async -> Result<TokenClaims, VerdictError> {
        // jwt-kit verifies a token whose `kid` it lacks with its default key: a kid is
        // checked against the documents' own first.
        let kid = kid(ofJWT: token)
        guard let remote = application.remote else {
            if let refused = refusalBeforeVerifying(kid: kid, application) { return .failure(VerdictError(refused)) }
            guard let keys = application.keys else { return .failure(VerdictError(.refused("a JWT, and the application takes none"))) }
            do {
                return .success(try await keys.verify(token, as: TokenClaims.self))
            } catch {
                return .failure(VerdictError(.refused("the JWT does not verify: \(describe(error))")))
            }
        }
        // Before a first fetch succeeded: ask again in the background (at most every 5 s) and
        // answer now; a fetch from a URL that is down can take its whole 5 s.
        var available = remote.keys()
        if available == nil { available = remote.keys(missingKey: true) }
        guard var current = available else {
            return .failure(VerdictError(.unavailable(remote.unavailableReason ?? "the JWKS at \(remote.url) is not fetched yet")))
        }
        if let kid, !remote.kids.contains(kid) {
            // A rotation: the provider may have published the key since the last fetch.
            _ = remote.keys(missingKey: true)
            await remote.settle()
            guard remote.kids.contains(kid), let fresher = remote.keys() else {
                return .failure(VerdictError(.refused("the JWT's kid \(kid.prefix(64)) is not in the JWKS at \(remote.url)")))
            }
            current = fresher
        }
        for attempt in 0..<2 {
            do {
                return .success(try await current.verify(token, as: TokenClaims.self))
            } catch let error as JWTError where error.errorType == .unknownKID && attempt == 0 {
                _ = remote.keys(missingKey: true)
                await remote.settle()
                guard let fresher = remote.keys() else { break }
                current = fresher
            } catch {
                return .failure(VerdictError(.refused("the JWT does not verify: \(describe(error))")))
            }
        }
        return .failure(VerdictError(.refused("the JWT does not verify: its key is not in the JWKS at \(remote.url)")))
    }

    /// The `kid` of a JWT's header, if it names one.
    static func kid(ofJWT token: String) -> String? {
        guard let header = token.split(separator: ".", maxSplits: 1).first, header.utf8.count <= 4096 else { return nil }
        var base64 = header.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
        return object["kid"] as? String
    }

    /// The `kid`s a JWKS document names.
    static func kids(ofJWKS document: String) -> Set<String> {
        guard let object = try? JSONSerialization.jsonObject(with: Data(document.utf8)) as? [String: Any],
              let keys = object["keys"] as? [[String: Any]] else { return [] }
        return Set(keys.compactMap { $0["kid"] as? String })
    }

    struct VerdictError: Error {
        let verdict: TokenVerdict
        init(_ verdict: TokenVerdict) { self.verdict = verdict }
    }

    /// The HMAC token of `action` on `path` until `expires` (unix seconds): lowercase hex of
    /// HMAC-SHA256(secret, "action:app/name:expires").
    public static func hmac(secret: String, action: TokenAction, path: StreamPath, expires: Int64) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: message(action, path: path, expires: expires), using: SymmetricKey(data: Data(secret.utf8)))
        return code.map { String(format: "%02x", $0) }.joined()
    }

    /// What an HMAC token signs: "action:app/name:expires".
    static func message(_ action: TokenAction, path: StreamPath, expires: Int64) -> Data {
        Data("\(action.rawValue):\(path.app)/\(path.name):\(expires)".utf8)
    }

    /// A SHA-256 code in hex (either case), or nil for anything else.
    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count == 2 * SHA256.byteCount else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(SHA256.byteCount)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? JWTError {
            return String("\(error.errorType)".prefix(80))
        }
        return String("\(error)".prefix(120))
    }
}

/// A token configuration that cannot be used, with the application it belongs to.
public struct TokenConfigurationError: Error, CustomStringConvertible {
    public var application: String
    public var reason: String

    public var description: String { "tokens.\(application): \(reason)" }
}
