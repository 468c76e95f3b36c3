import Foundation
import Media

/// What an SRT caller asks for, read from its stream id (`SRTO_STREAMID`) in either of the
/// two conventions encoders and players already use:
///
/// - SRS's, after the SRT access-control spec: `#!::r=live/cam,m=publish,key=…` (`m=request`
///   or `m=play` to watch; no `m` means watch);
/// - MediaMTX's: `publish:live/cam`, `read:live/cam`, or a plain `live/cam` meaning watch,
///   each with an optional `?key=…&token=…`.
///
/// A percent-encoded id (`%23!::r=…`, as a URL must carry `#`) is decoded first. Keys and
/// tokens become the session's query, so that they meet the same admission as an
/// RTMP publisher's. Anything else (no resource, a path that is not `app/name`, an unknown
/// mode) is refused before any session exists.
public struct SRTStreamID: Sendable, Equatable {
    public enum Mode: Sendable, Equatable {
        case publish
        case play
    }

    public var mode: Mode
    public var path: StreamPath
    /// `key=…&token=…`: everything but the resource and the mode, as a URL query.
    public var query: String

    public enum Invalid: Error, Equatable, CustomStringConvertible {
        case empty
        case tooLong(Int)
        case missingResource
        case badMode(String)
        case badPath(String)

        public var description: String {
            switch self {
            case .empty: return "the stream id is empty: give publish:app/name, or #!::r=app/name,m=publish"
            case .tooLong(let length): return "the stream id is \(length) bytes, over SRT's 512"
            case .missingResource: return "the stream id names no stream (r=app/name)"
            case .badMode(let mode): return "unknown mode '\(Self.printable(mode, 32))': publish, request or play"
            case .badPath(let path): return "'\(Self.printable(path, 64))' is not app/name"
            }
        }

        /// What the caller sent, as one line for a log: at most `limit` characters, anything
        /// but printable ASCII shown as `?` (a stream id must not write lines of its own).
        static func printable(_ text: String, _ limit: Int) -> String {
            String(text.unicodeScalars.prefix(limit).map { (0x20..<0x7F).contains($0.value) ? Character($0) : "?" })
        }
    }

    /// SRT's own bound on a stream id.
    public static let maxLength = 512

    public init(parsing raw: String) throws(Invalid) {
        guard !raw.isEmpty else { throw .empty }
        guard raw.utf8.count <= Self.maxLength else { throw .tooLong(raw.utf8.count) }
        // A caller that had to put the id in a URL may have percent-encoded it (`%23!::…`,
        // since `#` starts a URL's fragment). No stream name, key or token has a `%` of its own.
        let text = raw.contains("%") ? (raw.removingPercentEncoding ?? raw) : raw
        if text.hasPrefix("#!::") {
            try self.init(accessControl: text.dropFirst(4))
        } else {
            try self.init(mediaMTX: Substring(text))
        }
    }

    private init(accessControl body: Substring) throws(Invalid) {
        var resource: Substring?
        var mode = Mode.play
        var query: [String] = []
        for pair in body.split(separator: ",", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = parts[0]
            let value = parts.count > 1 ? parts[1] : ""
            switch key {
            case "r": resource = value
            case "m":
                switch value {
                case "publish": mode = .publish
                case "request", "play": mode = .play
                default: throw .badMode(String(value))
                }
            default: query.append("\(key)=\(value)")
            }
        }
        guard let resource, !resource.isEmpty else { throw .missingResource }
        let (path, inline) = Self.splitQuery(resource)
        self.mode = mode
        self.path = try Self.streamPath(path)
        self.query = ([inline].compactMap { $0 } + query).filter { !$0.isEmpty }.joined(separator: "&")
    }

    private init(mediaMTX text: Substring) throws(Invalid) {
        var rest = text
        var mode = Mode.play
        if rest.hasPrefix("publish:") {
            mode = .publish
            rest = rest.dropFirst("publish:".count)
        } else if rest.hasPrefix("read:") {
            rest = rest.dropFirst("read:".count)
        }
        let (withCredentials, query) = Self.splitQuery(rest)
        // `publish:app/name:user:pass`: the credentials are MediaMTX's; Estuary's are the
        // query's key or token, and the user and password are not kept.
        let path = withCredentials.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)[0]
        guard !path.isEmpty else { throw .missingResource }
        self.mode = mode
        self.path = try Self.streamPath(path)
        self.query = query ?? ""
    }

    private static func splitQuery(_ text: Substring) -> (Substring, String?) {
        guard let mark = text.firstIndex(of: "?") else { return (text, nil) }
        return (text[..<mark], String(text[text.index(after: mark)...]))
    }

    private static func streamPath(_ text: Substring) throws(Invalid) -> StreamPath {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let path = try? StreamPath(app: String(parts[0]), name: String(parts[1])) else {
            throw .badPath(String(text))
        }
        return path
    }
}
