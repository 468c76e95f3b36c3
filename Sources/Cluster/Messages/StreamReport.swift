/// One stream as a node sees it, sent with every heartbeat: the node's side of the truth,
/// which the coordinator reconciles its records with.
///
/// Which fields are set depends on what the node does with the stream: an ingest sets
/// `publishing` (and `bytes`), a relay `viewers`, a transcoder `rungs`. A node of role `all`
/// may set all of them in one report.
public struct StreamReport: Codable, Sendable, Hashable {
    public var app: String
    public var name: String
    /// Set by the ingest that holds the publisher: the stream's current facts.
    public var publishing: StreamFacts?
    /// Bytes received from the publisher so far (ingest).
    public var bytes: Int64?
    /// Viewers of the stream on this node, all renditions and protocols (relay).
    public var viewers: Int?
    /// Rungs this node is producing for the stream (transcoder).
    public var rungs: [String]?
    /// The rungs the transcoder encodes now, with their real sizes (a ladder's rungs above
    /// the source are skipped): nil until it knows the source's picture, and from
    /// transcoders that do not say.
    public var produced: [RungSpec]?
    /// The upstream this node pulls the stream from (edge), without credentials.
    public var upstream: String?

    public init(app: String, name: String, publishing: StreamFacts? = nil, bytes: Int64? = nil, viewers: Int? = nil, rungs: [String]? = nil, upstream: String? = nil) {
        self.app = app
        self.name = name
        self.publishing = publishing
        self.bytes = bytes
        self.viewers = viewers
        self.rungs = rungs
        self.upstream = upstream
    }

    /// An ingest's report of a stream it publishes.
    public static func publishing(app: String, name: String, facts: StreamFacts, bytes: Int64 = 0) -> StreamReport {
        StreamReport(app: app, name: name, publishing: facts, bytes: bytes)
    }

    /// A relay's report of a stream it plays.
    public static func playing(app: String, name: String, viewers: Int) -> StreamReport {
        StreamReport(app: app, name: name, viewers: viewers)
    }

    /// An edge's report of a stream it pulls.
    public static func pulling(app: String, name: String, viewers: Int, upstream: String?) -> StreamReport {
        StreamReport(app: app, name: name, viewers: viewers, upstream: upstream)
    }

    /// A transcoder's report of a job it runs.
    public static func transcoding(app: String, name: String, rungs: [String], produced: [RungSpec]? = nil) -> StreamReport {
        var report = StreamReport(app: app, name: name, rungs: rungs)
        report.produced = produced
        return report
    }
}

extension StreamReport {
    /// One report per stream: what several roles of one node said of the same `app/name`
    /// (the ingest's facts, the relay's viewers, the transcoder's rungs), combined, in the
    /// order the streams first appear. A field two reports both set keeps the first value.
    public static func merged(_ reports: [StreamReport]) -> [StreamReport] {
        var order: [String] = []
        var byPath: [String: StreamReport] = [:]
        for report in reports {
            let key = "\(report.app)/\(report.name)"
            guard var existing = byPath[key] else {
                order.append(key)
                byPath[key] = report
                continue
            }
            existing.publishing = existing.publishing ?? report.publishing
            existing.bytes = existing.bytes ?? report.bytes
            existing.viewers = existing.viewers ?? report.viewers
            existing.rungs = existing.rungs ?? report.rungs
            existing.produced = existing.produced ?? report.produced
            existing.upstream = existing.upstream ?? report.upstream
            byPath[key] = existing
        }
        return order.compactMap { byPath[$0] }
    }
}
