import Media
import Synchronization

/// A session's bytes, counted by its protocol as it reads and writes: once per socket read
/// or write (or per batch of frames), never per frame. Shared by reference between the
/// protocol, which adds, and the node's session table, which reads.
public final class SessionTraffic: Sendable {
    private let bytesIn = Atomic<Int>(0)
    private let bytesOut = Atomic<Int>(0)
    private let linkState = Mutex<LinkStatistics?>(nil)

    public init() {}

    /// The link as last sampled (SRT: every second), for the session's entry.
    public var link: LinkStatistics? {
        get { linkState.withLock { $0 } }
    }

    public func update(link: LinkStatistics) {
        linkState.withLock { $0 = link }
    }

    public func received(_ bytes: Int) {
        bytesIn.add(bytes, ordering: .relaxed)
    }

    public func sent(_ bytes: Int) {
        bytesOut.add(bytes, ordering: .relaxed)
    }

    public var received: Int { bytesIn.load(ordering: .relaxed) }
    public var sent: Int { bytesOut.load(ordering: .relaxed) }
}

/// Ends a session from outside (an operator's kick, `DELETE /api/v1/sessions/{id}`), with a
/// reason the protocol tells its client where it can (RTMP: an `onStatus` before the close).
public typealias SessionKick = @Sendable (_ reason: String) -> Void
