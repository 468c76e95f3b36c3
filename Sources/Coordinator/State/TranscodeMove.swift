/// A transcode job that moved off a dead transcoder: the caller logs it, and the new
/// transcoder receives the job as a `NodeInstruction.transcode` with its next heartbeat.
public struct TranscodeMove: Sendable, Hashable, CustomStringConvertible {
    public var app: String
    public var name: String
    public var from: String
    /// nil when no alive transcoder could take it (it is placed when one appears).
    public var to: String?

    public var description: String { "\(app)/\(name): \(from) → \(to ?? "(unplaced)")" }
}
