import Media
import NIOConcurrencyHelpers

/// The streams a node accepts into applications with a ladder, bounded: each starts an x264
/// ladder, so anyone who can publish could otherwise start as many as they like. A stream
/// holds its slot from its publish until its publisher leaves; a publisher resuming its own
/// stream reuses the slot.
final class TranscodeSlots: Sendable {
    /// A reload may change it; streams holding slots keep them.
    var limit: Int? {
        get { limitSetting.value }
        set { limitSetting.set(newValue) }
    }
    private let limitSetting: Reloadable<Int?>
    private struct Slot {
        var publisher: StreamHub.PublisherID?
    }
    private let slots = NIOLockedValueBox<[StreamPath: Slot]>([:])

    init(limit: Int?) {
        limitSetting = Reloadable(limit)
    }

    /// Holds a slot for `path` (or finds it held already); false when every slot is taken.
    func reserve(_ path: StreamPath) -> Bool {
        slots.withLockedValue { slots in
            if slots[path] != nil { return true }
            if let limit, slots.count >= limit { return false }
            slots[path] = Slot()
            return true
        }
    }

    /// The publisher now holding `path`'s slot.
    func bind(_ path: StreamPath, to publisher: StreamHub.PublisherID) {
        slots.withLockedValue { $0[path] = Slot(publisher: publisher) }
    }

    /// Gives back a slot reserved for a publish that was refused.
    func cancel(_ path: StreamPath) {
        slots.withLockedValue { slots in
            if slots[path]?.publisher == nil { slots[path] = nil }
        }
    }

    /// Gives back `path`'s slot if `publisher` still holds it.
    func release(_ path: StreamPath, id publisher: StreamHub.PublisherID) {
        slots.withLockedValue { slots in
            if slots[path]?.publisher == publisher { slots[path] = nil }
        }
    }
}
