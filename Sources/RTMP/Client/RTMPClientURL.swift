/// An `rtmp://host[:port]/app/stream` URL as an RTMP client splits it: the application is
/// every path element but the last, the stream name the last one (with any query), as
/// ffmpeg and librtmp do. So `rtmp://origin/abr/demo/480p` connects to application
/// `abr/demo` and plays `480p`, Estuary's address of that rung.
public struct RTMPClientURL: Sendable, Equatable, CustomStringConvertible {
    public let host: String
    public let port: Int
    public let app: String
    public let streamName: String

    public enum ParseError: Error, Equatable {
        case notRTMP(String)
        case malformed(String)
    }

    public init(host: String, port: Int = 1935, app: String, streamName: String) {
        self.host = host
        self.port = port
        self.app = app
        self.streamName = streamName
    }

    public init(_ string: String) throws(ParseError) {
        let scheme = "rtmp://"
        guard string.lowercased().hasPrefix(scheme) else { throw .notRTMP(string) }
        let rest = string.dropFirst(scheme.count)
        guard let slash = rest.firstIndex(of: "/") else { throw .malformed(string) }
        let authority = rest[..<slash]
        let path = rest[rest.index(after: slash)...]
        let host: Substring
        var port = 1935
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            host = authority[authority.index(after: authority.startIndex)..<close]
            let tail = authority[authority.index(after: close)...]
            if !tail.isEmpty {
                guard tail.hasPrefix(":"), let value = Int(tail.dropFirst()) else { throw .malformed(string) }
                port = value
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            guard let value = Int(authority[authority.index(after: colon)...]) else { throw .malformed(string) }
            port = value
        } else {
            host = authority
        }
        guard !host.isEmpty, (1...65535).contains(port), let lastSlash = path.lastIndex(of: "/") else {
            throw .malformed(string)
        }
        let app = path[..<lastSlash]
        let stream = path[path.index(after: lastSlash)...]
        guard !app.isEmpty, !stream.isEmpty else { throw .malformed(string) }
        self.init(host: String(host), port: port, app: String(app), streamName: String(stream))
    }

    /// The `tcUrl` of `connect`: the URL without the stream name.
    public var tcURL: String {
        let authority = host.contains(":") ? "[\(host)]" : host
        return "rtmp://\(authority):\(port)/\(app)"
    }

    public var description: String { "\(tcURL)/\(streamName)" }
}
