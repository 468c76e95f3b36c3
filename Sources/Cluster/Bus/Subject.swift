/// NATS subject syntax, checked the same way by every bus so that code tested on
/// `LocalBus` behaves identically on `NATSBus`.
///
/// A subject is tokens separated by `.`; tokens are non-empty and contain no whitespace.
/// In a subscription's subject a token may be `*` (exactly one token) and the last token
/// may be `>` (one or more tokens). Published subjects contain no wildcard tokens.
enum Subject {
    /// Long enough for `media.<app>.<name>.<rendition>` with 128-character names.
    static let maxLength = 1024

    static let star: Substring = "*"
    static let tail: Substring = ">"

    /// The tokens of a valid published subject, or nil.
    static func publishTokens(_ subject: String) -> [Substring]? {
        guard let tokens = tokens(subject) else { return nil }
        for token in tokens where token == star || token == tail {
            return nil
        }
        return tokens
    }

    /// The tokens of a valid subscription subject (wildcards allowed), or nil.
    static func filterTokens(_ subject: String) -> [Substring]? {
        guard let tokens = tokens(subject) else { return nil }
        for (index, token) in tokens.enumerated() where token == tail && index != tokens.count - 1 {
            return nil
        }
        return tokens
    }

    /// Same answer as `publishTokens(subject) != nil`, in one pass without allocating:
    /// NATSBus checks every publish on the caller's (often an event loop's) thread.
    static func isValidPublish(_ subject: String) -> Bool {
        let utf8 = subject.utf8
        guard !utf8.isEmpty, utf8.count <= maxLength else { return false }
        var tokenLength = 0
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "."):
                guard tokenLength > 0 else { return false }
                tokenLength = 0
            case 0...0x20, 0x7F, UInt8(ascii: "*"), UInt8(ascii: ">"):
                return false
            default:
                tokenLength += 1
            }
        }
        return tokenLength > 0
    }

    /// Whether a published subject matches a subscription's subject.
    static func matches(filter: String, subject: String) -> Bool {
        guard let filterTokens = filterTokens(filter), let subjectTokens = publishTokens(subject) else { return false }
        for (index, token) in filterTokens.enumerated() {
            if token == tail {
                return subjectTokens.count > index
            }
            guard index < subjectTokens.count, token == star || token == subjectTokens[index] else { return false }
        }
        return filterTokens.count == subjectTokens.count
    }

    private static func tokens(_ subject: String) -> [Substring]? {
        guard !subject.isEmpty, subject.utf8.count <= maxLength else { return nil }
        let tokens = subject.split(separator: ".", omittingEmptySubsequences: false)
        for token in tokens {
            guard !token.isEmpty else { return nil }
            for byte in token.utf8 where byte <= 0x20 || byte == 0x7F {
                return nil
            }
            // A wildcard is a whole token; `a*` or `>b` are literal in NATS but confusing, so refuse them.
            if token.count > 1, token.contains(where: { $0 == "*" || $0 == ">" }) {
                return nil
            }
        }
        return tokens
    }
}
