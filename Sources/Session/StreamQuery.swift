import Foundation

/// The query a client sent with a stream's name: after `?` in an RTMP publish or play name
/// (`demo?key=abc`), or an HTTP request's query. Stream keys and play tokens travel here.
public struct StreamQuery: Sendable, Hashable, CustomStringConvertible {
    /// As received, without the `?`; empty when absent.
    public let raw: String

    public init(_ raw: String = "") {
        self.raw = raw
    }

    /// A publisher's stream key: `key=…`, or the `streamKey=…` and `token=…` that some
    /// encoders' settings call it; the first of them in the query.
    public var streamKey: String? {
        for pair in raw.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, ["key", "streamKey", "token"].contains(String(parts[0])) else { continue }
            return String(parts[1]).removingPercentEncoding ?? String(parts[1])
        }
        return nil
    }

    /// The first value of `name`, percent-decoded; nil when absent.
    public func value(for name: String) -> String? {
        for pair in raw.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == name else { continue }
            return String(parts[1]).removingPercentEncoding ?? String(parts[1])
        }
        return nil
    }

    /// Both queries, this one's parameters first (RTMP: the application's, then the stream name's).
    public func merging(_ other: StreamQuery) -> StreamQuery {
        if raw.isEmpty { return other }
        if other.raw.isEmpty { return self }
        return StreamQuery(raw + "&" + other.raw)
    }

    /// The query without values, for logs: keys are secrets.
    public var description: String {
        raw.split(separator: "&").map { $0.split(separator: "=", maxSplits: 1).first.map { "\($0)=…" } ?? "" }.joined(separator: "&")
    }
}
