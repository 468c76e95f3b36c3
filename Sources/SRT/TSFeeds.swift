import Logging
import Media
import Metrics
import Synchronization

/// The `TSFeed`s of the streams SRT players watch, one per hub: the first player of a
/// stream starts its feed, the last one to leave stops it.
final class TSFeeds: Sendable {
    private struct Entry {
        let feed: TSFeed
        var players: Int
    }

    /// The most bytes of muxed TS a stream keeps for its players: several GOPs at the
    /// bitrates contribution links carry.
    let maxBytesPerStream: Int
    let writeTimeout: Duration
    private let logger: Logger
    private let feeds = Mutex<[ObjectIdentifier: Entry]>([:])
    /// Streams muxed for SRT players now: one per watched stream, however many watch.
    private static let gauge = Gauge(label: "estuary_srt_ts_feeds")

    init(maxBytesPerStream: Int = 8 * 1024 * 1024, writeTimeout: Duration, logger: Logger) {
        self.maxBytesPerStream = maxBytesPerStream
        self.writeTimeout = writeTimeout
        self.logger = logger
    }

    /// The feed of `hub`, started if no one watches it yet; nil when the hub has ended.
    func acquire(_ hub: StreamHub) -> TSFeed? {
        feeds.withLock { feeds in
            let id = ObjectIdentifier(hub)
            if var entry = feeds[id] {
                entry.players += 1
                feeds[id] = entry
                return entry.feed
            }
            guard let feed = TSFeed(hub: hub, maxBytes: maxBytesPerStream, writeTimeout: writeTimeout, logger: logger) else { return nil }
            feeds[id] = Entry(feed: feed, players: 1)
            Self.gauge.record(feeds.count)
            return feed
        }
    }

    /// A player of `feed` left.
    func release(_ feed: TSFeed) {
        let stopped: TSFeed? = feeds.withLock { feeds in
            let id = ObjectIdentifier(feed.hub)
            guard var entry = feeds[id], entry.feed === feed else { return nil }
            entry.players -= 1
            guard entry.players <= 0 else {
                feeds[id] = entry
                return nil
            }
            feeds[id] = nil
            Self.gauge.record(feeds.count)
            return feed
        }
        stopped?.stop()
    }

    /// Streams with a feed now.
    var count: Int { feeds.withLock { $0.count } }
}
