/// What one retention pass (`CoordinatorState.pruneHistory(now:)`) deleted, per table.
public struct PruneCounts: Sendable, Hashable, CustomStringConvertible {
    public var events = 0
    /// Ended publish sessions.
    public var streams = 0
    /// Renditions of those sessions.
    public var renditions = 0
    /// Dead nodes.
    public var nodes = 0
    /// Revoked stream keys.
    public var streamKeys = 0
    /// Some table had more to delete than `CoordinatorRetention.maxRowsPerPass` allowed:
    /// `run()` prunes again at its next sweep instead of an interval later.
    public var isPartial = false

    public var total: Int { events + streams + renditions + nodes + streamKeys }

    public var isEmpty: Bool { total == 0 }

    /// Rows deleted per table, by the table's name in the database.
    var byTable: [(table: String, rows: Int)] {
        [("events", events), ("streams", streams), ("renditions", renditions), ("nodes", nodes), ("stream_keys", streamKeys)]
    }

    public var description: String {
        let deleted = byTable.filter { $0.rows > 0 }.map { "\($0.rows) \($0.table)" }
        return (deleted.isEmpty ? "nothing" : deleted.joined(separator: ", ")) + (isPartial ? " (more left)" : "")
    }
}
