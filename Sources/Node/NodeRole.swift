import ArgumentParser

/// What a node process does: every role in one process (the embedded default), or one role
/// of a cluster connected by NATS.
enum NodeRole: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// Ingest, transcode and relay in one process, over an in-process bus.
    case all
    /// Accepts RTMP publishers and puts their streams on the bus.
    case ingest
    /// Takes ladder jobs: decodes a source from the bus, publishes each rung.
    case transcode
    /// Serves players (HTTP-FLV, HLS, RTMP) from streams it fetches from the bus on demand.
    case relay
    /// Keeps the cluster's state in SQLite and answers the admin API.
    case coordinator
}
