import Metrics

/// The coordinator's counters. Nodes and streams themselves are listed by the admin API;
/// these count the events an operator alerts on.
enum CoordinatorMetrics {
    /// Nodes declared dead after `deadAfter` without a heartbeat.
    static let deadNodes = Counter(label: "estuary_coordinator_dead_nodes_total")
    /// Nodes that said they leave (a drain's end, a signal): not deaths.
    static let nodesLeft = Counter(label: "estuary_coordinator_nodes_left_total")
    /// Publish claims refused: another ingest claimed the stream a moment before
    /// (`PublishClaims`, two encoders starting one stream on two ingests at once).
    static let claimsRefused = Counter(label: "estuary_coordinator_publish_claims_refused_total")
    /// Transcode jobs moved off dead transcoders.
    static let transcodeMoves = Counter(label: "estuary_coordinator_transcode_moves_total")
    /// Publishes refused for a wrong, revoked or missing stream key.
    static let refusedStreamKeys = Counter(label: "estuary_coordinator_stream_keys_refused_total")
    /// Ingests told of a key revocation the moment it happened (the rest hear of it with
    /// their next heartbeat).
    static let revocationsPushed = Counter(label: "estuary_coordinator_key_revocations_pushed_total")
    /// Revocations not queued for an ingest that already had `maxPendingRevocations` waiting.
    static let revocationsDropped = Counter(label: "estuary_coordinator_key_revocations_dropped_total")

    /// Rows deleted by the retention pass (`CoordinatorRetention`), by table (`events`,
    /// `streams`, `renditions`, `nodes`, `stream_keys`).
    static func rowsPruned(_ rows: Int, table: String) {
        Counter(label: "estuary_coordinator_rows_pruned_total", dimensions: [("table", table)]).increment(by: rows)
    }
}
