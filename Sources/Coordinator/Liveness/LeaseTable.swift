import Foundation
import NIOCore
import Synchronization

/// The coordinator's judgement of which nodes are alive, from their beacons (`LivenessBeacon`).
///
/// A node holds a lease while its beacons (every 250 ms) keep coming. The lease is a deadline
/// that tolerates late beacons, not a count of missed ones: a node is *suspect* once its last
/// beacon is older than `suspectAfter`, and *expired* once it is older than `lease`. A suspect
/// is probed once (`liveness.probe.<node>`): a process that is gone has no subscription left,
/// and the server's "no responders" answer says so at once (a crash is known in about half a
/// second); a stopped or cut-off process answers nothing, and its lease runs out (a second).
///
/// Beacons are recorded on the bus's delivery thread, with no task and no database write, so
/// a busy coordinator does not age them; and the coordinator judges only while its own
/// node's beacon, which makes the same round trip through the server, is fresh: when its own
/// intake stalls, every lease is extended rather than every node declared dead. A node that
/// says it leaves (`LivenessBeacon.leave`, at the end of a drain or on a signal) is reported
/// as having left at the next look, whatever the coordinator's own beacon, and is neither
/// probed nor expired. The table holds at most `maxNodes` nodes; beacons of others are
/// ignored.
public final class LeaseTable: Sendable {
    public struct Settings: Sendable {
        /// A node whose last beacon is older than this is dead.
        public var lease: Duration = .seconds(1)
        /// A node whose last beacon is older than this is probed once.
        public var suspectAfter: Duration = .milliseconds(500)
        /// The most nodes tracked.
        public var maxNodes = 4096
        public init() {}
    }

    /// What a look at the table found.
    public struct Judgement: Equatable, Sendable {
        /// Nodes whose lease ran out.
        public var expired: [String] = []
        /// Nodes to probe, once each per silence.
        public var suspects: [String] = []
        /// Nodes that said they leave.
        public var left: [String] = []
    }

    private struct Entry {
        var lastSeen: UInt64
        var probed = false
        /// When the node said it leaves. A beacon within `suspectAfter` after is one its
        /// thread sent as the node stopped it; a later one (a restart under the same id)
        /// starts a new lease.
        var leftAt: UInt64?
        var leaving: Bool { leftAt != nil }
    }

    public let settings: Settings
    private let entries = Mutex<[String: Entry]>([:])
    private let clock: @Sendable () -> UInt64

    public convenience init(settings: Settings = Settings()) {
        self.init(settings: settings, clock: { NIODeadline.now().uptimeNanoseconds })
    }

    /// With a clock of its own (uptime nanoseconds), for tests.
    public init(settings: Settings, clock: @escaping @Sendable () -> UInt64) {
        self.settings = settings
        self.clock = clock
    }

    /// Records a beacon of `nodeID` (on the bus's delivery thread).
    public func beat(_ nodeID: String) {
        let now = clock()
        let suspectAfter = Self.nanoseconds(settings.suspectAfter)
        entries.withLock { entries in
            if let leftAt = entries[nodeID]?.leftAt, now &- min(leftAt, now) < suspectAfter { return }
            guard entries[nodeID] != nil || entries.count < settings.maxNodes else { return }
            entries[nodeID] = Entry(lastSeen: now)
        }
    }

    /// Records that `nodeID` leaves (on the bus's delivery thread).
    public func leave(_ nodeID: String) {
        let now = clock()
        entries.withLock { entries in
            guard entries[nodeID] != nil || entries.count < settings.maxNodes else { return }
            entries[nodeID] = Entry(lastSeen: now, leftAt: now)
        }
    }

    /// Whether `nodeID`'s lease holds: a beacon came within `lease`.
    public func holdsLease(_ nodeID: String) -> Bool {
        let now = clock()
        let lease = Self.nanoseconds(settings.lease)
        return entries.withLock { entries in
            guard let entry = entries[nodeID] else { return false }
            return now &- min(entry.lastSeen, now) <= lease
        }
    }

    /// Which nodes are expired and which to probe, judged only while `localNodeID`'s own
    /// beacon is fresh (nil: always). Suspects returned are marked probed.
    public func judge(localNodeID: String?) -> Judgement {
        let now = clock()
        let lease = Self.nanoseconds(settings.lease)
        let suspectAfter = Self.nanoseconds(settings.suspectAfter)
        return entries.withLock { entries in
            // A node's own word needs no judging.
            var judgement = Judgement(left: entries.filter { $0.value.leaving && $0.key != localNodeID }.keys.sorted())
            if let localNodeID {
                guard let own = entries[localNodeID], now &- min(own.lastSeen, now) <= suspectAfter else {
                    return judgement
                }
            }
            for (nodeID, entry) in entries where nodeID != localNodeID && !entry.leaving {
                let age = now &- min(entry.lastSeen, now)
                if age > lease {
                    judgement.expired.append(nodeID)
                } else if age > suspectAfter, !entry.probed {
                    judgement.suspects.append(nodeID)
                    entries[nodeID]?.probed = true
                }
            }
            judgement.expired.sort()
            judgement.suspects.sort()
            return judgement
        }
    }

    /// Drops `nodeID` (declared dead, or recorded as left): its next beacon starts a new lease.
    public func forget(_ nodeID: String) {
        _ = entries.withLock { $0.removeValue(forKey: nodeID) }
    }

    /// Nodes tracked now.
    public var count: Int { entries.withLock { $0.count } }

    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds / 1_000_000_000))
    }
}
