import Foundation
import Media

/// One server an edge pulls from, as given to `--upstream`.
///
/// - `http://host[:port][/prefix]` (or `https://`) is an HTTP-FLV origin: Estuary, SRS,
///   nginx-http-flv or anything that serves `/{app}/{name}.flv`. A stream `app/name` is
///   pulled from `<base>/app/name.flv`, one of its rungs from `<base>/app/name/<rung>.flv`
///   (Estuary's rendition address).
/// - `rtmp://host[:port]` is an RTMP origin (Estuary, nginx-rtmp, SRS): a stream is played
///   as `rtmp://host:port/app/name`, a rung as `rtmp://host:port/app/name/rung`.
/// - `estuary://cluster` is the Estuary cluster the edge joined (`--nats`): a stream is
///   fetched over the cluster's bus, as a relay does (the name after `//` is only a label).
public struct Upstream: Sendable, Hashable, CustomStringConvertible {
    public enum Scheme: String, Sendable {
        case http, https, rtmp, estuary
    }

    public let scheme: Scheme
    /// `host:port` (IPv6 in brackets), as it goes into a URL.
    public let authority: String
    /// A path prefix without a trailing slash ("" for none).
    public let prefix: String

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case unsupportedScheme(String)
        case malformed(String)

        public var description: String {
            switch self {
            case .unsupportedScheme(let url):
                "\(url): an upstream is http://, https:// (HTTP-FLV), rtmp:// or estuary:// (the cluster's bus)"
            case .malformed(let url):
                "\(url): not an upstream URL (http[s]://host[:port][/prefix] or rtmp://host[:port])"
            }
        }
    }

    /// Parses one upstream URL. Query strings and fragments are refused: the edge appends
    /// the stream's path, and a viewer's query is not forwarded.
    public init(_ string: String) throws(ParseError) {
        let text = string.trimmingCharacters(in: .whitespaces)
        guard let separator = text.range(of: "://") else { throw .malformed(string) }
        guard let scheme = Scheme(rawValue: text[..<separator.lowerBound].lowercased()) else {
            throw .unsupportedScheme(string)
        }
        let rest = text[separator.upperBound...]
        let authorityEnd = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = String(rest[..<authorityEnd])
        var prefix = String(rest[authorityEnd...])
        while prefix.hasSuffix("/") { prefix.removeLast() }
        guard !authority.isEmpty, authority.count <= 255,
              !authority.contains(where: { $0 == "@" || $0 == "?" || $0 == "#" || $0.isWhitespace }),
              !prefix.contains(where: { $0 == "?" || $0 == "#" || $0.isWhitespace }),
              // An RTMP application is the stream's own; a prefix would change it; the bus
              // has no paths.
              (scheme != .rtmp && scheme != .estuary) || prefix.isEmpty
        else {
            throw .malformed(string)
        }
        self.scheme = scheme
        self.authority = authority
        self.prefix = prefix
    }

    /// Parses a comma-separated list (`--upstream a,b`), in order of preference.
    public static func list(_ string: String) throws(ParseError) -> [Upstream] {
        var upstreams: [Upstream] = []
        for part in string.split(separator: ",") where !part.trimmingCharacters(in: .whitespaces).isEmpty {
            upstreams.append(try Upstream(String(part)))
        }
        return upstreams
    }

    /// Where `path` is pulled from.
    public func url(for path: RenditionPath) -> String {
        switch scheme {
        case .http, .https: "\(scheme.rawValue)://\(authority)\(prefix)/\(path).flv"
        case .rtmp: "rtmp://\(authority)/\(path)"
        case .estuary: "estuary://\(authority)/\(path)"
        }
    }

    public var description: String { "\(scheme.rawValue)://\(authority)\(prefix)" }
}
