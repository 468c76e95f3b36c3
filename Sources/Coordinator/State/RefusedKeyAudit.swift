import Foundation

/// Folds refused stream keys into at most one `key.refused` event per stream per window
/// (a minute).
///
/// Anyone who reaches an ingest's RTMP port can present made-up keys, and every one of
/// them reaches the coordinator (an ingest cannot tell a made-up key from a new one), so
/// an event per refusal would let a stranger grow the audit trail at a rate of their
/// choosing. The counter `estuary_coordinator_stream_keys_refused_total` still counts
/// every refusal. The trail gets the first refusal of a stream, then one event per window
/// that says how many refusals it stands for ("N refusals since <the previous event>");
/// `flush(at:)`, called by every sweep, writes that event for a stream whose refusals
/// stopped, so none goes untold.
///
/// Memory is bounded too: at most `capacity` streams are tracked, and a full table is
/// pruned of streams whose window is over. Refusals of further streams while the table is
/// full of recent ones (made-up stream names as well as keys) are folded together under
/// the subject `*`, so neither the table nor the trail grows with the names a stranger
/// invents.
struct RefusedKeyAudit {
    /// A `key.refused` event to write.
    struct Event: Sendable, Hashable {
        /// `app/name`, or `*` for streams the full table could not take.
        var subject: String
        var detail: String
    }

    /// A stream's last event and the refusals folded since.
    struct Entry: Hashable {
        var lastEventAt: Date
        var folded: Int
    }

    /// The subject of refusals folded because the table was full.
    static let overflowSubject = "*"

    let window: TimeInterval
    let capacity: Int
    private(set) var entries: [CoordinatorState.StreamKey: Entry] = [:]
    /// Refusals of streams the full table could not take.
    private(set) var overflow: Entry?

    init(window: TimeInterval = 60, capacity: Int = 1024) {
        self.window = window
        self.capacity = max(1, capacity)
    }

    /// A refusal of `stream` at `time`: the events to write now, none when the refusal is
    /// folded into a later event.
    mutating func refused(_ stream: CoordinatorState.StreamKey, at time: Date) -> [Event] {
        if var entry = entries[stream] {
            let event = fold(into: &entry, subject: stream.description, at: time)
            entries[stream] = entry
            return event.map { [$0] } ?? []
        }
        var events: [Event] = []
        if entries.count >= capacity {
            events = forgetExpired(at: time)
        }
        if entries.count < capacity {
            entries[stream] = Entry(lastEventAt: time, folded: 0)
            events.append(Event(subject: stream.description, detail: ""))
        } else if var entry = overflow {
            if let event = fold(into: &entry, subject: Self.overflowSubject, at: time) {
                events.append(event)
            }
            overflow = entry
        } else {
            overflow = Entry(lastEventAt: time, folded: 0)
            events.append(Event(
                subject: Self.overflowSubject,
                detail: "keys refused for more than \(capacity) streams within \(Int(window)) s: the refusals of further streams are counted here"
            ))
        }
        return events
    }

    /// The events of streams whose window is over with refusals folded since their last
    /// event: each such event starts a new window. Streams whose window is over with
    /// nothing folded are forgotten.
    mutating func flush(at time: Date) -> [Event] {
        guard !entries.isEmpty || overflow != nil else { return [] }
        var events: [Event] = []
        for (stream, entry) in expired(at: time) {
            if entry.folded > 0 {
                events.append(Event(subject: stream.description, detail: Self.detail(entry)))
                entries[stream] = Entry(lastEventAt: time, folded: 0)
            } else {
                entries[stream] = nil
            }
        }
        if let entry = overflow, isOver(entry, at: time) {
            if entry.folded > 0 {
                events.append(Event(subject: Self.overflowSubject, detail: Self.detail(entry)))
                overflow = Entry(lastEventAt: time, folded: 0)
            } else {
                overflow = nil
            }
        }
        return events
    }

    /// Makes room in a full table: forgets every stream whose window is over, returning the
    /// events of those with refusals folded (their counts would be lost otherwise).
    private mutating func forgetExpired(at time: Date) -> [Event] {
        var events: [Event] = []
        for (stream, entry) in expired(at: time) {
            if entry.folded > 0 {
                events.append(Event(subject: stream.description, detail: Self.detail(entry)))
            }
            entries[stream] = nil
        }
        return events
    }

    /// The streams whose window is over, in order (so that events are written in an order
    /// tests can rely on); only those are sorted, as this runs at every sweep.
    private func expired(at time: Date) -> [(stream: CoordinatorState.StreamKey, entry: Entry)] {
        entries.filter { isOver($0.value, at: time) }
            .map { (stream: $0.key, entry: $0.value) }
            .sorted { $0.stream < $1.stream }
    }

    /// Within the window the refusal is folded (nil); after it, the event that closes the
    /// window, counting this refusal too, and a new window starts.
    private func fold(into entry: inout Entry, subject: String, at time: Date) -> Event? {
        guard isOver(entry, at: time) else {
            entry.folded += 1
            return nil
        }
        entry.folded += 1
        let event = Event(subject: subject, detail: Self.detail(entry))
        entry = Entry(lastEventAt: time, folded: 0)
        return event
    }

    private func isOver(_ entry: Entry, at time: Date) -> Bool {
        time.timeIntervalSince(entry.lastEventAt) >= window
    }

    /// How many refusals an event stands for: those since the previous event of its subject.
    static func detail(_ entry: Entry) -> String {
        "\(entry.folded) refusal\(entry.folded == 1 ? "" : "s") since \(entry.lastEventAt)"
    }
}
