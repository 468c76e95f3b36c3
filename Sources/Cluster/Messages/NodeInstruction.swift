/// What the coordinator asks a node to do, returned by heartbeats.
///
/// Transcode instructions are declarative: a heartbeat reply carries `transcode` for every
/// job assigned to the node that its heartbeat did not report, and `stopTranscode` for every
/// job it reported that is not (or no longer) its own. A node therefore treats them as
/// idempotent ("make sure this runs"), and a lost reply is repaired by the next heartbeat.
public enum NodeInstruction: Codable, Sendable, Hashable {
    /// Run this job (start it unless it already runs).
    case transcode(TranscodeAssignment)
    /// Stop the job for `app/name` (it ended, or moved elsewhere).
    case stopTranscode(app: String, name: String)
    /// Disconnect the publisher of `app/name` (an operator's kick).
    case kick(app: String, name: String)
    /// A stream key of `app/name` was revoked: forget every cached acceptance of a key for
    /// it, and disconnect its publisher if the key it came with is no longer valid.
    case keyRevoked(app: String, name: String)
    /// The coordinator does not know this node (it lost its state, or declared the node
    /// dead and forgot it): call `register` again with the streams it carries.
    case register
}
