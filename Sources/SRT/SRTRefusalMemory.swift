import CSRT
import Session
import Synchronization

/// The admission's refusals of SRT callers, remembered for a while, so that a caller that
/// tries again with the same request is rejected in the handshake, with a code it can show
/// (`SRT_REJX_UNAUTHORIZED` for a wrong key or token, …), instead of a second connection
/// closed without a word.
///
/// Why this is needed: libsrt's listen callback runs on the thread that carries every SRT
/// connection's packets, so it waits for the admission only briefly, for what it can ask
/// without consequences (a stream key asked of the coordinator, a JWT), and never for a
/// hook's HTTP call. A caller is then admitted after the handshake, and a first refusal
/// there can only close the connection. Encoders retry (OBS every
/// few seconds, `srt-live-transmit -a`): from the second attempt on, they see why. It also
/// spares the admission (and the operator's hooks) a caller retrying in a loop.
///
/// Only denials are remembered (`SessionRefusal.Kind.denied`: a wrong or missing key or
/// token, a hook's no): the same credentials get the same answer. A stream another publisher
/// holds, a capacity, a drain, keys not fetched yet or a stream not live yet last moments,
/// and replaying them would keep a reconnecting encoder, a backup encoder taking over or an
/// early viewer out for no reason; they are asked again each time.
///
/// A request is the caller's host with its stream id's mode, stream and parameters (a key, a
/// token): a caller that changes any of them is asked about afresh. Callers behind one
/// address (a NAT) share an entry only when their requests are identical, and then the
/// admission would deny them alike. Bounded: `maxEntries`; when full, the table starts over
/// (a flood of distinct denied requests then gets each denied once more by the admission,
/// which costs no more than without the memory).
public final class SRTRefusalMemory: Sendable {
    public struct Remembered: Sendable, Equatable {
        /// The rejection reason to send (`SRT_REJX_*`).
        public var code: Int32
        /// The admission's reason, for the log.
        public var reason: String
        public var until: ContinuousClock.Instant
    }

    public let duration: Duration
    public let maxEntries: Int
    private let entries = Mutex<[String: Remembered]>([:])

    public init(duration: Duration = .seconds(10), maxEntries: Int = 4096) {
        self.duration = duration
        self.maxEntries = max(1, maxEntries)
    }

    /// The request a refusal is remembered under.
    public static func key(host: String, _ streamID: SRTStreamID) -> String {
        "\(host)|\(streamID.mode)|\(streamID.path)|\(streamID.query)"
    }

    /// The SRT rejection reason for a refusal of the admission, as HTTP has a status for it.
    public static func code(for refusal: SessionRefusal) -> Int32 {
        switch refusal.kind {
        case .denied: SRT_REJX_UNAUTHORIZED
        case .notFound: SRT_REJX_NOTFOUND
        // Taken by another publisher, or a name the node does not take.
        case .badName: SRT_REJX_CONFLICT
        // A capacity, a drain, a redirect (SRT has none to give): try later.
        case .unavailable: SRT_REJX_OVERLOAD
        }
    }

    /// Whether a refusal is remembered: a denial only (see the type's comment).
    public static func isRemembered(_ refusal: SessionRefusal) -> Bool {
        refusal.kind == .denied && refusal.redirect == nil
    }

    /// Remembers `refusal` of `key`, if it is a denial.
    public func remember(_ key: String, _ refusal: SessionRefusal, now: ContinuousClock.Instant = .now) {
        guard Self.isRemembered(refusal) else { return }
        let remembered = Remembered(code: Self.code(for: refusal), reason: refusal.description, until: now + duration)
        entries.withLock { entries in
            // O(1) per refusal: the libsrt thread that vets every handshake takes this lock.
            if entries[key] == nil, entries.count >= maxEntries { entries.removeAll(keepingCapacity: true) }
            entries[key] = remembered
        }
    }

    /// The refusal remembered for `key`, while it lasts.
    public func recall(_ key: String, now: ContinuousClock.Instant = .now) -> Remembered? {
        entries.withLock { entries in
            guard let remembered = entries[key] else { return nil }
            guard remembered.until > now else {
                entries[key] = nil
                return nil
            }
            return remembered
        }
    }

    public var count: Int { entries.withLock { $0.count } }
}
