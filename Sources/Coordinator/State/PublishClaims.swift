import Foundation

/// The cluster's one-publisher rule as a lock, for the moment the bus question cannot
/// cover: two encoders that start one stream on two ingests within the same few
/// milliseconds, before either ingest's publication answers on the bus, both hear nobody
/// and would both be admitted. An ingest that the bus question lets through claims the
/// stream here; the coordinator's actor takes claims one at a time, so of two ingests at the
/// same moment one holds the claim and the other is refused.
///
/// A claim is short (`window`, 3 s): it only has to cover an admission until the admitted
/// publisher's publication answers on the bus (milliseconds), from which point the bus
/// question refuses others itself (a publisher is busy for 2 s after it attaches, whether
/// or not it has sent anything). So it needs no release, and an ingest that admitted its
/// publisher and died holds nobody up for long. A claim of a node whose lease is gone is
/// void at once. The node that holds a claim may claim again (a retry there), and a claim
/// that takes over (`takingOver`: the ingest that held the stream answered the bus
/// question yes, its publisher closed) replaces whoever held it. At most
/// `maxClaims` are held; past it, new claims are granted without being held (the bus rule
/// alone, as without the lock), never refused for the table's sake.
struct PublishClaims {
    struct Claim {
        var node: String
        var expires: Date
    }

    static let window: TimeInterval = 3
    static let maxClaims = 65_536

    private var claims: [CoordinatorState.StreamKey: Claim] = [:]

    /// The node that holds `stream` against `node` now, or nil once `node` holds it.
    /// `holdsLease` says whether a node is alive by its beacons (nil: no beacons, every
    /// holder counts).
    mutating func claim(
        _ stream: CoordinatorState.StreamKey, by node: String, now: Date, takingOver: Bool = false, holdsLease: ((String) -> Bool)? = nil
    ) -> String? {
        if !takingOver, let current = claims[stream], current.expires > now, current.node != node, holdsLease?(current.node) ?? true {
            return current.node
        }
        if claims[stream] == nil, claims.count >= Self.maxClaims {
            prune(now: now)
            guard claims.count < Self.maxClaims else { return nil }
        }
        claims[stream] = Claim(node: node, expires: now.addingTimeInterval(Self.window))
        return nil
    }

    /// Drops the claims that ran out.
    mutating func prune(now: Date) {
        claims = claims.filter { $0.value.expires > now }
    }

    var count: Int { claims.count }
}
