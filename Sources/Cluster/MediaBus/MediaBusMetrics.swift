import Metrics

/// Metrics of media over the bus. Labels have bounded cardinality (no stream names).
enum MediaBusMetrics {
    /// Bus messages on a media subject that failed to parse, by `MediaBusFrameError.reason`
    /// (truncated, version, oversized, malformed).
    static func droppedMessage(reason: String, factory: any MetricsFactory) {
        Counter(label: "estuary_bus_messages_dropped_total", dimensions: [("reason", reason)], factory: factory).increment()
    }

    /// Sequence gaps and lost fragments seen by media subscribers.
    static func gap(factory: any MetricsFactory) {
        Counter(label: "estuary_bus_media_gaps_total", factory: factory).increment()
    }
}
