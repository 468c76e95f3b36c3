import Foundation
import Media
import RTMP

/// Where a forwarded stream is pushed, as configured per application (`forwards`):
///
/// - `rtmp://host[:port]/app` pushes each stream under its own name (`app/<name>`), as
///   nginx-rtmp's `push` does;
/// - `rtmp://host[:port]/app/{name}` says so explicitly, with `{name}` anywhere in the last
///   element (`{name}_backup`);
/// - `rtmp://host[:port]/app/KEY` (two or more path elements, no `{name}`) pushes every
///   stream of the application to that one stream name: a platform's stream key.
public struct ForwardTarget: Sendable, Hashable, CustomStringConvertible {
    public let host: String
    public let port: Int
    public let app: String
    /// The stream name, with `{name}` where the published name goes.
    public let streamTemplate: String

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case malformed(String)

        public var description: String {
            switch self {
            case .malformed(let url): "\(url): a forward target is rtmp://host[:port]/app[/name]"
            }
        }
    }

    public init(_ string: String) throws(ParseError) {
        let templated = string.contains("{name}")
        // An application URL: parse it with a placeholder stream to reuse the client's split.
        let parsed: RTMPClientURL
        do {
            parsed = try RTMPClientURL(templated || Self.pathElements(string) >= 2 ? string : string + "/{name}")
        } catch {
            throw .malformed(string)
        }
        guard !parsed.app.contains("{name}") else { throw .malformed(string) }
        self.host = parsed.host
        self.port = parsed.port
        self.app = parsed.app
        self.streamTemplate = parsed.streamName
    }

    private static func pathElements(_ string: String) -> Int {
        guard let range = string.range(of: "://") else { return 0 }
        let rest = string[range.upperBound...]
        guard let slash = rest.firstIndex(of: "/") else { return 0 }
        return rest[rest.index(after: slash)...].split(separator: "/", omittingEmptySubsequences: true).count
    }

    /// The URL a stream is pushed to.
    public func url(for path: StreamPath) -> RTMPClientURL {
        RTMPClientURL(host: host, port: port, app: app, streamName: streamTemplate.replacingOccurrences(of: "{name}", with: path.name))
    }

    /// The target without its stream name, which may be a secret key: for logs, metrics and
    /// the admin API.
    public var description: String {
        let authority = host.contains(":") ? "[\(host)]" : host
        let name = streamTemplate == "{name}" ? "{name}" : "…"
        return "rtmp://\(authority):\(port)/\(app)/\(name)"
    }
}
