import Foundation
import Media
import Tokens

extension NodeConfiguration {
    /// `tokens` from the file: application names valid (or `*`), actions known, at least one
    /// way to sign, the JWKS file readable, `onExpiry` kick or keep.
    static func tokens(_ settings: [String: NodeConfigurationFile.TokenSettings]) throws -> [String: ApplicationTokens] {
        var tokens: [String: ApplicationTokens] = [:]
        for (app, value) in settings {
            guard app == TokenVerifier.everyApplication || StreamPath.isValidComponent(app) else {
                throw ConfigurationError.invalidValue("tokens: invalid application name '\(app)' (an application, or * for all)")
            }
            var actions = Set(TokenAction.allCases)
            if let names = value.actions {
                actions = []
                for name in names {
                    guard let action = TokenAction(rawValue: name) else {
                        throw ConfigurationError.invalidValue("tokens.\(app).actions: expected play or publish, got '\(name.prefix(40))'")
                    }
                    actions.insert(action)
                }
            }
            // HS256 needs a key at least as long as SHA-256's output (RFC 7518 3.2).
            for (key, secret, least) in [("hmacSecret", value.hmacSecret, 16), ("jwtSecret", value.jwtSecret, 32)] {
                if let secret, secret.utf8.count < least {
                    throw ConfigurationError.invalidValue("tokens.\(app).\(key) must be at least \(least) bytes, got \(secret.utf8.count)")
                }
            }
            var jwks: String?
            if let file = value.jwksFile {
                guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8),
                      (try? JSONSerialization.jsonObject(with: data)) is [String: Any] else {
                    throw ConfigurationError.invalidValue("tokens.\(app).jwksFile: '\(file)' is not a readable JSON document")
                }
                jwks = text
            }
            if let url = value.jwksURL {
                guard url.utf8.count <= 2048, let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme?.lowercased()), parsed.host?.isEmpty == false else {
                    throw ConfigurationError.invalidValue("tokens.\(app).jwksURL: expected an http:// or https:// URL, got '\(url.prefix(80))'")
                }
            }
            guard value.hmacSecret != nil || value.jwtSecret != nil || jwks != nil || value.jwksURL != nil else {
                throw ConfigurationError.invalidValue("tokens.\(app): needs hmacSecret, jwtSecret, jwksFile or jwksURL")
            }
            let kick: Bool
            switch value.onExpiry ?? "kick" {
            case "kick": kick = true
            case "keep": kick = false
            case let other: throw ConfigurationError.invalidValue("tokens.\(app).onExpiry: expected kick or keep, got '\(other.prefix(40))'")
            }
            tokens[app] = ApplicationTokens(actions: actions, hmacSecret: value.hmacSecret, jwtSecret: value.jwtSecret, jwks: jwks, jwksURL: value.jwksURL, kickOnExpiry: kick)
        }
        return tokens
    }
}
