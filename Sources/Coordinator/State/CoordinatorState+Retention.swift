import Foundation
import GRDB
import Logging
import Metrics

extension CoordinatorState {
    /// Deletes the history `configuration.retention` no longer keeps, as of `time`: events
    /// past their age or beyond the row cap, ended sessions and their renditions, dead
    /// nodes nothing refers to any more, and revoked keys (`HistoryPruning`). One write
    /// transaction, so the file never holds half a pass; each table loses at most
    /// `maxRowsPerPass` rows.
    ///
    /// `run()` calls it every `retention.interval`; the time is a parameter so that a test
    /// (or an operator's tool) can prune as of any moment.
    @discardableResult
    public func pruneHistory(now time: Date) async throws -> PruneCounts {
        let retention = configuration.retention
        let counts = try await store.write { db in try HistoryPruning.prune(db, now: time, retention: retention) }
        if !counts.isEmpty {
            logger.info("Pruned coordinator history: \(counts)")
            for (table, rows) in counts.byTable where rows > 0 {
                CoordinatorMetrics.rowsPruned(rows, table: table)
            }
        }
        return counts
    }

    /// Prunes when `retention.interval` has passed since the last pass, or at once when
    /// that pass left rows behind (`PruneCounts.isPartial`). A failed pass is logged and
    /// tried again an interval later, not at every sweep.
    func pruneHistoryIfDue() async {
        let time = now()
        if let nextPruneAt, time < nextPruneAt { return }
        nextPruneAt = time.addingTimeInterval(configuration.retention.interval.timeInterval)
        do {
            if try await pruneHistory(now: time).isPartial {
                nextPruneAt = time
            }
        } catch is CancellationError {
            return
        } catch {
            logger.warning("Coordinator retention pass failed: \(error)")
        }
    }
}
