import Metrics

/// Counters of the RTMP listener. Labels have bounded cardinality (no stream names).
enum RTMPMetrics {
    static let connectionsOpened = Counter(label: "estuary_rtmp_connections_opened_total")
    static let publishes = Counter(label: "estuary_rtmp_publishes_total")
    static let refusedPublishes = Counter(label: "estuary_rtmp_publishes_refused_total")
    static let plays = Counter(label: "estuary_rtmp_plays_total")

    /// Connections the server closed because of bad input or policy, by reason.
    static func closed(reason: String) {
        Counter(label: "estuary_rtmp_connections_closed_total", dimensions: [("reason", reason)]).increment()
    }
}
