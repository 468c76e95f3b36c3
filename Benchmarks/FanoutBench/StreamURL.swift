/// The parts of `rtmp://host[:port]/app/name` (or `rtmps://`) the RTMP viewer needs.
struct RTMPURL: Sendable {
    /// `rtmps://`: the viewer speaks TLS first.
    var tls = false
    var host: String
    var port: Int
    var app: String
    var streamName: String
    /// `rtmp://host:port/app`, sent as `tcUrl` in `connect`.
    var tcURL: String

    init(parsing text: String) throws(URLError) {
        tls = text.lowercased().hasPrefix("rtmps://")
        let (host, port, path) = try splitURL(text, scheme: tls ? "rtmps" : "rtmp", defaultPort: tls ? 443 : 1935)
        let segments = path.split(separator: "/", omittingEmptySubsequences: true)
        guard segments.count >= 2 else { throw .missingPath(text) }
        self.host = host
        self.port = port
        self.app = segments.dropLast().joined(separator: "/")
        self.streamName = String(segments.last!)
        self.tcURL = "\(tls ? "rtmps" : "rtmp")://\(host):\(port)/\(self.app)"
    }
}

/// The parts of `http://host[:port]/path` (or `https://`) the HTTP-FLV viewer needs.
struct HTTPURL: Sendable {
    /// `https://`: the viewer speaks TLS first.
    var tls = false
    var host: String
    var port: Int
    var path: String

    init(parsing text: String) throws(URLError) {
        tls = text.lowercased().hasPrefix("https://")
        let (host, port, path) = try splitURL(text, scheme: tls ? "https" : "http", defaultPort: tls ? 443 : 80)
        guard !path.isEmpty else { throw .missingPath(text) }
        self.host = host
        self.port = port
        self.path = path
    }

    /// The request, with `Host` as the URL spelled it.
    var request: String {
        "GET \(self.path) HTTP/1.1\r\nHost: \(self.host):\(self.port)\r\nUser-Agent: fanout-bench\r\nAccept: */*\r\n\r\n"
    }
}

/// Why a URL argument was rejected.
enum URLError: Error, Equatable, CustomStringConvertible {
    case wrongScheme(String, expected: String)
    case badPort(String)
    case missingPath(String)

    var description: String {
        switch self {
        case .wrongScheme(let url, let expected): return "\(url): expected a \(expected):// URL"
        case .badPort(let url): return "\(url): bad port"
        case .missingPath(let url): return "\(url): missing path (want /app/name)"
        }
    }
}

/// Splits `scheme://host[:port]/path` into host, port and path (with its leading slash).
private func splitURL(_ text: String, scheme: String, defaultPort: Int) throws(URLError) -> (String, Int, String) {
    let prefix = scheme + "://"
    guard text.lowercased().hasPrefix(prefix) else { throw .wrongScheme(text, expected: scheme) }
    let rest = text.dropFirst(prefix.count)
    let authority = rest.prefix { $0 != "/" }
    let path = String(rest.dropFirst(authority.count))
    var host = String(authority)
    var port = defaultPort
    if let colon = authority.lastIndex(of: ":") {
        host = String(authority[..<colon])
        guard let value = Int(authority[authority.index(after: colon)...]), (1...65535).contains(value) else {
            throw .badPort(text)
        }
        port = value
    }
    return (host, port, path)
}
