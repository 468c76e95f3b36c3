import Synchronization

/// At most `burst` log lines per `window` for one key (a remote address): a client that
/// reconnects in a loop must not flood the log with session lines. Lines held back are
/// counted and reported with the next one let through. Bounded: at most `maxKeys` keys are
/// tracked; when full, the table starts over (a flood from many addresses then logs a
/// burst per address again, still bounded per window).
public final class LogRateLimiter: Sendable {
    public struct Verdict: Sendable {
        public init(allowed: Bool, suppressed: Int) {
            self.allowed = allowed
            self.suppressed = suppressed
        }

        public var allowed: Bool
        /// Lines held back for this key since the last one let through.
        public var suppressed: Int
    }

    private struct Entry {
        var windowStart: ContinuousClock.Instant
        var count: Int
        public var suppressed: Int
    }

    public let burst: Int
    public let window: Duration
    public let maxKeys: Int
    private let entries = Mutex<[String: Entry]>([:])

    public init(burst: Int = 5, window: Duration = .seconds(10), maxKeys: Int = 4096) {
        self.burst = max(1, burst)
        self.window = window
        self.maxKeys = max(1, maxKeys)
    }

    public func check(_ key: String, now: ContinuousClock.Instant = .now) -> Verdict {
        entries.withLock { entries in
            if entries[key] == nil, entries.count >= maxKeys { entries.removeAll(keepingCapacity: true) }
            var entry = entries[key] ?? Entry(windowStart: now, count: 0, suppressed: 0)
            if now - entry.windowStart >= window {
                entry.windowStart = now
                entry.count = 0
            }
            entry.count += 1
            guard entry.count <= burst else {
                entry.suppressed += 1
                entries[key] = entry
                return Verdict(allowed: false, suppressed: entry.suppressed)
            }
            let suppressed = entry.suppressed
            entry.suppressed = 0
            entries[key] = entry
            return Verdict(allowed: true, suppressed: suppressed)
        }
    }
}
