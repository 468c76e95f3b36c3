/// The coordinator's answer to a heartbeat.
public struct HeartbeatReply: Codable, Sendable, Hashable {
    public var instructions: [NodeInstruction]
    /// How often the coordinator expects heartbeats; a node missing them for
    /// `deadAfter` is declared dead.
    public var heartbeatInterval: Duration
    public var deadAfter: Duration

    public init(instructions: [NodeInstruction], heartbeatInterval: Duration, deadAfter: Duration) {
        self.instructions = instructions
        self.heartbeatInterval = heartbeatInterval
        self.deadAfter = deadAfter
    }
}
