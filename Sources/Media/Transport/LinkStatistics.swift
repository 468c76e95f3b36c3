/// A session's transport link as its protocol measures it (SRT's, from libsrt), on the
/// session's entry in the admin API. A publisher's counts are of what it received, a
/// player's of what it sent.
public struct LinkStatistics: Codable, Sendable, Equatable {
    /// The smoothed round-trip time.
    public var rttSeconds: Double
    /// The link's rate in the session's direction.
    public var bitsPerSecond: Double
    /// Packets found missing (a receiver) or reported lost (a sender).
    public var packetsLost: Int
    /// Packets sent again.
    public var packetsRetransmitted: Int
    /// Packets given up on, too late for the latency.
    public var packetsDropped: Int

    public init(rttSeconds: Double, bitsPerSecond: Double, packetsLost: Int, packetsRetransmitted: Int, packetsDropped: Int) {
        self.rttSeconds = rttSeconds
        self.bitsPerSecond = bitsPerSecond
        self.packetsLost = packetsLost
        self.packetsRetransmitted = packetsRetransmitted
        self.packetsDropped = packetsDropped
    }
}
