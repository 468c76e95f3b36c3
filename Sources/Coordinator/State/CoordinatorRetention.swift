/// How long the coordinator keeps its history, and how the retention pass of `run()` goes.
///
/// Only history is ever deleted: live streams and their renditions, alive nodes and
/// unrevoked keys are kept however old they are. Without a retention pass every table
/// grows for the life of the file (a session per publish, an event per change), and the
/// sweep's queries over them slow down with it.
public struct CoordinatorRetention: Sendable, Hashable {
    /// Audit events older than this are deleted.
    public var events: Duration
    /// At most this many events are kept, the oldest deleted first, whatever their age:
    /// the trail's size stays bounded even when something writes events faster than
    /// `events` lets them age out.
    public var maxEvents: Int
    /// Ended publish sessions (and their renditions) are deleted this long after they ended.
    public var endedStreams: Duration
    /// Dead nodes are deleted once not heard from for this long, and only when no stream
    /// or rendition still names them (the foreign keys of `streams.ingest_node` and
    /// `renditions.transcoder_node`): a node whose sessions are still kept stays as well.
    public var deadNodes: Duration
    /// Revoked stream keys are deleted this long after their revocation. Longer than the
    /// rest: a revocation is what an operator looks up after an incident.
    public var revokedKeys: Duration
    /// How often `run()` prunes. Pruning once a minute keeps the tables within a minute
    /// of their bounds and costs one short write transaction.
    public var interval: Duration
    /// At most this many rows of each table per pass, so that a pass stays a short
    /// transaction even over a large backlog (a file from before retention existed); a
    /// pass that reached it is followed by another at the next sweep.
    public var maxRowsPerPass: Int

    public init(
        events: Duration = .seconds(7 * 86_400),
        maxEvents: Int = 100_000,
        endedStreams: Duration = .seconds(7 * 86_400),
        deadNodes: Duration = .seconds(7 * 86_400),
        revokedKeys: Duration = .seconds(30 * 86_400),
        interval: Duration = .seconds(60),
        maxRowsPerPass: Int = 10_000
    ) {
        self.events = events
        self.maxEvents = maxEvents
        self.endedStreams = endedStreams
        self.deadNodes = deadNodes
        self.revokedKeys = revokedKeys
        self.interval = interval
        self.maxRowsPerPass = maxRowsPerPass
    }
}
