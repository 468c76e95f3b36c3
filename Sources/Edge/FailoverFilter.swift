import Media
import NIOCore

/// What of an upstream's frames goes into the edge's hub, so that moving to another
/// upstream shows viewers one continuous stream.
///
/// A new upstream connection starts like a new HTTP-FLV viewer's: metadata and
/// configuration records (with early timestamps), then its cached GOP, media the viewers
/// have already seen if the new upstream carries the same stream on the same timeline (a
/// second relay of the cluster, or a second origin fed by the same encoder).
///
/// - Configuration records and metadata identical to the last ones forwarded are dropped:
///   they would only move the hub's timeline back (their timestamps are early).
/// - The new connection's first media frame decides the timeline: if its timestamp is one
///   the edge received lately on that track, the upstream is on the same timeline, and
///   media at or before the last timestamp forwarded on its track is dropped. Otherwise it
///   is another timeline (an independent origin), everything passes, and the hub's
///   `TimestampNormalizer` re-bases the jump as for a reconnecting publisher.
struct FailoverFilter: Sendable {
    private enum Timeline: Sendable {
        /// The first connection of a pull: nothing to deduplicate.
        case first
        /// A new connection whose first media frame has not arrived yet.
        case undecided
        case same
        case other
    }

    /// Media timestamps remembered per track, to recognise the same timeline.
    static let remembered = 512

    private var timeline = Timeline.first
    private var records: [MediaKind: ByteBuffer] = [:]
    private var last: [MediaKind: Int64] = [:]
    private var recent: [MediaKind: RecentTimestamps] = [:]

    /// A new upstream connection begins.
    mutating func newConnection() {
        timeline = .undecided
    }

    /// Whether `frame` (with the upstream's own timestamp) goes into the hub.
    mutating func admit(_ frame: MediaFrame) -> Bool {
        if frame.isSequenceHeader || frame.kind == .script {
            guard records[frame.kind] != frame.payload else { return false }
            records[frame.kind] = frame.payload
            return true
        }
        let kind = frame.kind
        if case .undecided = timeline {
            timeline = recent[kind]?.contains(frame.timestamp) == true ? .same : .other
        }
        if case .same = timeline, let previous = last[kind], frame.timestamp <= previous {
            return false
        }
        last[kind] = frame.timestamp
        recent[kind, default: RecentTimestamps(capacity: Self.remembered)].append(frame.timestamp)
        return true
    }

    /// A bounded ring of timestamps.
    struct RecentTimestamps: Sendable {
        private var values: [Int64] = []
        private var next = 0
        let capacity: Int

        init(capacity: Int) {
            self.capacity = max(1, capacity)
        }

        mutating func append(_ value: Int64) {
            if values.count < capacity {
                values.append(value)
            } else {
                values[next] = value
                next = (next + 1) % capacity
            }
        }

        func contains(_ value: Int64) -> Bool {
            values.contains(value)
        }
    }
}
