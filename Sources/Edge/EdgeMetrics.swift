import Metrics

/// The edge's metrics: what it pulls, from where, and how often it had to move.
enum EdgeMetrics {
    /// Streams (renditions) being pulled now.
    static let pulls = Meter(label: "estuary_edge_pulls")
    /// Times a pull moved to another upstream (or reconnected) after its upstream failed.
    static let failovers = Counter(label: "estuary_edge_failovers_total")
    /// Upstream connections opened, by outcome (`media`, `not_found`, `error`).
    static func connections(_ outcome: String) {
        Counter(label: "estuary_edge_upstream_connections_total", dimensions: [("outcome", outcome)]).increment()
    }
    /// 1 while an upstream's last attempt succeeded, 0 after a failure.
    static func upstreamUp(_ upstream: Upstream, _ up: Bool) {
        Gauge(label: "estuary_edge_upstream_up", dimensions: [("upstream", upstream.description)]).record(up ? 1 : 0)
    }
}
