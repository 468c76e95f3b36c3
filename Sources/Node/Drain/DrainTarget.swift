import Foundation

/// The server URL a draining node sends publishers to.
enum DrainTarget {
    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    /// `rtmp://host[:port]` or `rtmps://…`, at most 512 bytes, without a trailing slash,
    /// query or user: the stream's application is appended to it.
    static func validated(_ url: String) throws(Invalid) -> String {
        let trimmed = url.hasSuffix("/") ? String(url.dropLast()) : url
        guard trimmed.utf8.count <= 512 else { throw Invalid(description: "longer than 512 bytes") }
        guard let components = URLComponents(string: trimmed), let scheme = components.scheme?.lowercased(),
              scheme == "rtmp" || scheme == "rtmps", let host = components.host, !host.isEmpty,
              components.query == nil, components.user == nil, components.fragment == nil
        else {
            throw Invalid(description: "'\(trimmed.prefix(80))' is not rtmp://host[:port]")
        }
        return trimmed
    }
}
