import Metrics

/// Counters of the RTMP listener. Labels have bounded cardinality (no stream names).
enum RTMPMetrics {
    static let connectionsOpened = Counter(label: "estuary_rtmp_connections_opened_total")
    /// Connection log lines not written: one client address over its burst (`LogRateLimiter`).
    static let logLinesHeldBack = Counter(label: "estuary_log_lines_held_back_total", dimensions: [("source", "rtmp")])
    static let publishes = Counter(label: "estuary_rtmp_publishes_total")
    static let refusedPublishes = Counter(label: "estuary_rtmp_publishes_refused_total")
    static let plays = Counter(label: "estuary_rtmp_plays_total")
    /// Enhanced RTMP v2 reconnect requests sent to publishers (a draining node).
    static let reconnectRequests = Counter(label: "estuary_rtmp_reconnect_requests_total")
    /// Multitrack video tracks past the most a publisher may add, dropped.
    static let droppedTracks = Counter(label: "estuary_rtmp_tracks_dropped_total")
    /// Multitrack audio tracks dropped: past the most a publisher may add, or for a frame
    /// that does not parse (counted once a track).
    static let droppedAudioTracks = Counter(label: "estuary_rtmp_audio_tracks_dropped_total")
    /// Multitrack tracks (video or audio) ended because they sent nothing for an idle check
    /// while their publisher went on.
    static let silentTracks = Counter(label: "estuary_rtmp_tracks_silent_total")
    /// Connections open now (past the accept-time limits).
    private static let openConnectionsGauge = Gauge(label: "estuary_rtmp_connections_open")
    static func openConnections(_ count: Int) { openConnectionsGauge.record(count) }

    /// Connections refused at accept (connection limits), by reason.
    static func refusedConnections(reason: String) {
        Counter(label: "estuary_rtmp_connections_refused_total", dimensions: [("reason", reason)]).increment()
    }

    /// Metadata dropped instead of passed on (too large, too many values), by reason.
    static func droppedMetadata(reason: String) {
        Counter(label: "estuary_rtmp_metadata_dropped_total", dimensions: [("reason", reason)]).increment()
    }

    /// Connections the server closed because of bad input or policy, by reason.
    static func closed(reason: String) {
        Counter(label: "estuary_rtmp_connections_closed_total", dimensions: [("reason", reason)]).increment()
    }
}
