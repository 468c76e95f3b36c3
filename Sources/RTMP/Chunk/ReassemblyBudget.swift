import Synchronization

/// Bytes in reassembly across every RTMP connection of a node.
///
/// Each connection's ``ChunkDecoder`` already bounds its own reassembly; this bounds their sum,
/// so that many connections each declaring large messages cannot together exhaust the node.
/// A reservation that would pass the limit fails, and that connection is closed.
public final class ReassemblyBudget: Sendable {
    /// The most bytes reserved at once.
    public let limit: Int
    private let reserved = Atomic<Int>(0)

    public init(limit: Int) {
        self.limit = limit
    }

    /// Bytes reserved now.
    public var inUse: Int { self.reserved.load(ordering: .relaxed) }

    /// Reserves `bytes`; false (and nothing reserved) when that would pass the limit.
    func reserve(_ bytes: Int) -> Bool {
        var current = self.reserved.load(ordering: .relaxed)
        while true {
            guard current + bytes <= self.limit else { return false }
            let (exchanged, original) = self.reserved.compareExchange(expected: current, desired: current + bytes, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    /// Returns bytes reserved earlier.
    func release(_ bytes: Int) {
        guard bytes > 0 else { return }
        self.reserved.subtract(bytes, ordering: .relaxed)
    }
}
