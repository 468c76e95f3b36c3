import Cluster

/// Settings of the coordinator.
public struct CoordinatorConfiguration: Sendable {
    /// A node that has not heartbeated for this long is dead: its streams end and its
    /// transcode jobs move. 3 s is three missed heartbeats at the default interval, long
    /// enough to ride out a GC-free hiccup, short enough that a moved job is back within
    /// the 5 s.
    public var deadAfter: Duration = .seconds(3)
    /// How often nodes are asked to heartbeat (told in every reply).
    public var heartbeatInterval: Duration = .seconds(1)
    /// How often `run()` looks for dead nodes. A death is noticed at most this long after
    /// `deadAfter`, and the new transcoder learns of its job with its next heartbeat.
    public var sweepInterval: Duration = .milliseconds(250)
    /// Nodes that send beacons (`LivenessBeacon`) are judged by their lease instead
    /// (`CoordinatorState.setLiveness`), checked this often; their heartbeats may then be
    /// late by up to `wedgedAfter` (a node whose beacons come but whose heartbeats stopped
    /// is wedged, not busy).
    public var livenessInterval: Duration = .milliseconds(100)
    public var wedgedAfter: Duration = .seconds(30)
    /// This process's own node: never declared dead by the coordinator it hosts (with every
    /// role in one process, a saturated node once declared itself dead).
    public var localNodeID: String?
    /// The ladder of each application (`app` → rungs); streams of other apps get no
    /// transcode job.
    public var ladders: [String: [RungSpec]] = [:]
    /// How long history (events, ended sessions, dead nodes, revoked keys) is kept.
    public var retention: CoordinatorRetention = CoordinatorRetention()

    public init(
        deadAfter: Duration = .seconds(3),
        heartbeatInterval: Duration = .seconds(1),
        sweepInterval: Duration = .milliseconds(250),
        ladders: [String: [RungSpec]] = [:],
        retention: CoordinatorRetention = CoordinatorRetention()
    ) {
        self.deadAfter = deadAfter
        self.heartbeatInterval = heartbeatInterval
        self.sweepInterval = sweepInterval
        self.ladders = ladders
        self.retention = retention
    }
}
