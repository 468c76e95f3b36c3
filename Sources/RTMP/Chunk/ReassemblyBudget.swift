import NIOCore
import Synchronization

/// Bytes in reassembly across every RTMP connection of a node, and who pays when they run out.
///
/// Each connection's ``ChunkDecoder`` bounds its own reassembly; this bounds their sum, so
/// that many connections each starting large messages cannot together exhaust the node.
///
/// What it charges is memory that exists: the storage of a message's body as its bytes
/// arrive, never a length a header declares (``ChunkDecoder`` charges a message's buffer as
/// it grows). A connection that holds bytes has an ``Account``.
///
/// Who pays when the budget runs short is the connection that costs the node most, not the
/// next one to ask. Once the bytes held pass ``shedThreshold`` (the limit less a headroom),
/// the budget *sheds* holders, largest cost first, until what the rest hold is back under the
/// threshold. A holder's cost is its bytes times how long it has held some without pause
/// (at least ``minimumHoldingAge``): an encoder's messages finish within a frame or two, so
/// it returns to holding nothing many times a second, while a connection that means to pin
/// memory has to keep its messages unfinished. A shed account's next reservation fails and
/// its shed handler closes its connection; its bytes are given back when the connection
/// closes, which the headroom covers. Only a reservation that would pass the hard ``limit``
/// itself fails the connection that asks, and the headroom is there so that none does.
public final class ReassemblyBudget: Sendable {
    /// The most bytes held at once.
    public let limit: Int
    /// Above this many bytes held (not counting those of holders already shed), holders are shed.
    public let shedThreshold: Int
    /// A holder is charged for at least this long a holding, so that a message that began a
    /// moment ago still weighs by its bytes.
    public static let minimumHoldingAge: Duration = .milliseconds(250)
    private static let minimumHoldingAgeNanoseconds: UInt64 = 250_000_000

    private let reserved = Atomic<Int>(0)
    /// Accounts that hold bytes now: a holder is added as it goes from nothing to something and
    /// removed as it goes back, so a scan sees only connections mid-message.
    private let holders = Mutex<[ObjectIdentifier: Account]>([:])
    private let clock: @Sendable () -> UInt64

    /// - Parameters:
    ///   - limit: the most bytes held at once.
    ///   - headroom: the bytes between the shed threshold and the limit (default an eighth of
    ///     the limit): what holders may add while shed connections are still closing.
    public convenience init(limit: Int, headroom: Int? = nil) {
        self.init(limit: limit, headroom: headroom, clock: { NIODeadline.now().uptimeNanoseconds })
    }

    /// With a clock of its own (uptime nanoseconds), for tests that order holders by age.
    init(limit: Int, headroom: Int?, clock: @escaping @Sendable () -> UInt64) {
        self.limit = max(0, limit)
        let room = min(max(0, headroom ?? limit / 8), self.limit)
        self.shedThreshold = self.limit - room
        self.clock = clock
    }

    /// Bytes held now.
    public var inUse: Int { self.reserved.load(ordering: .relaxed) }

    /// Connections holding bytes now, shed ones included.
    public var holderCount: Int { self.holders.withLock { $0.count } }

    /// What one connection holds, and whether it has been shed. Used from the connection's own
    /// thread, except for the fields other connections read when they choose whom to shed.
    public final class Account: Sendable {
        fileprivate let held = Atomic<Int>(0)
        fileprivate let shed = Atomic<Bool>(false)
        /// When this account last went from holding nothing to holding something.
        fileprivate let holdingSince = Atomic<UInt64>(0)
        private let onShed: (@Sendable () -> Void)?

        /// - Parameter onShed: called once, on whichever thread shed it, when the budget sheds
        ///   this account: close the connection (its reservations fail from then on anyway).
        public init(onShed: (@Sendable () -> Void)? = nil) {
            self.onShed = onShed
        }

        /// Bytes this account holds.
        public var bytesHeld: Int { self.held.load(ordering: .relaxed) }
        /// Whether the budget shed this account.
        public var isShed: Bool { self.shed.load(ordering: .relaxed) }

        fileprivate func notifyShed() { self.onShed?() }
    }

    /// What a reservation came to.
    public enum Reservation: Equatable, Sendable {
        case reserved
        /// The budget shed this account (now, or earlier): close its connection.
        case shed
        /// The bytes would pass the hard limit.
        case exhausted
    }

    /// Reserves `bytes` for `account`; anything but `.reserved` reserves nothing.
    public func reserve(_ bytes: Int, for account: Account) -> Reservation {
        guard bytes > 0 else { return account.isShed ? .shed : .reserved }
        guard !account.isShed else { return .shed }
        let total = self.reserved.wrappingAdd(bytes, ordering: .relaxed).newValue
        guard total <= self.limit else {
            self.reserved.wrappingSubtract(bytes, ordering: .relaxed)
            return .exhausted
        }
        let before = account.held.wrappingAdd(bytes, ordering: .relaxed).oldValue
        if before == 0 {
            account.holdingSince.store(self.clock(), ordering: .relaxed)
            self.holders.withLock { $0[ObjectIdentifier(account)] = account }
        }
        if total > self.shedThreshold {
            self.shedCostliest()
            if account.isShed {
                self.release(bytes, for: account)
                return .shed
            }
        }
        return .reserved
    }

    /// Gives back bytes `account` reserved earlier.
    public func release(_ bytes: Int, for account: Account) {
        guard bytes > 0 else { return }
        let left = account.held.wrappingSubtract(bytes, ordering: .relaxed).newValue
        self.reserved.wrappingSubtract(bytes, ordering: .relaxed)
        if left <= 0 {
            self.holders.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(account)) }
        }
    }

    /// Gives back everything `account` holds: its connection closed.
    public func close(_ account: Account) {
        self.release(account.bytesHeld, for: account)
    }

    /// Sheds holders, costliest first, until those not shed hold no more than the threshold.
    private func shedCostliest() {
        let now = self.clock()
        let minimumAge = Self.minimumHoldingAgeNanoseconds
        let victims: [Account] = self.holders.withLock { holders in
            var live: [(account: Account, held: Int, cost: Double)] = []
            var liveBytes = 0
            for account in holders.values where !account.isShed {
                let held = account.bytesHeld
                let since = account.holdingSince.load(ordering: .relaxed)
                let age = max(now &- min(since, now), minimumAge)
                live.append((account, held, Double(held) * Double(age)))
                liveBytes += held
            }
            guard liveBytes > self.shedThreshold else { return [] }
            live.sort { $0.cost > $1.cost }
            var chosen: [Account] = []
            for candidate in live where liveBytes > self.shedThreshold {
                candidate.account.shed.store(true, ordering: .relaxed)
                liveBytes -= candidate.held
                chosen.append(candidate.account)
            }
            return chosen
        }
        for victim in victims { victim.notifyShed() }
    }
}
