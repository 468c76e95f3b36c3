import Media
import Synchronization

/// Paths recently found on no node, so that HLS requests do not ask the bus for absent
/// rungs on every playlist reload; entries expire after two seconds.
final class NegativeCache: Sendable {
    private let entries = Mutex<[RenditionPath: ContinuousClock.Instant]>([:])

    func contains(_ path: RenditionPath) -> Bool {
        entries.withLock { entries in
            guard let expiry = entries[path] else { return false }
            if expiry < .now {
                entries[path] = nil
                return false
            }
            return true
        }
    }

    /// The most names remembered: requests for random names must not grow the table.
    static let capacity = 4096

    func insert(_ path: RenditionPath) {
        entries.withLock { entries in
            if entries.count >= Self.capacity {
                let now = ContinuousClock.now
                entries = entries.filter { $0.value >= now }
                // Still full of live entries: forget them all, it is only a cache.
                if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            }
            entries[path] = .now + .seconds(2)
        }
    }

    var count: Int { entries.withLock { $0.count } }
}
