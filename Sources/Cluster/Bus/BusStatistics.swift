/// Message counters of a bus.
public struct BusStatistics: Sendable, Equatable {
    /// Messages handed to subscribers (for NATSBus: received from the server).
    public var messagesIn: UInt64 = 0
    public var bytesIn: UInt64 = 0
    /// Messages accepted by `publish` (for NATSBus: written or buffered for the server).
    public var messagesOut: UInt64 = 0
    public var bytesOut: UInt64 = 0
    /// Publishes that failed: payload too large, reconnect buffer full, connection closed.
    public var droppedOutgoing: UInt64 = 0
    /// Incoming messages dropped because a subscriber fell behind (NATS slow consumer).
    public var droppedIncoming: UInt64 = 0
    /// Times the connection came back after a loss (always 0 for LocalBus).
    public var reconnects: UInt64 = 0

    public init() {}
}
