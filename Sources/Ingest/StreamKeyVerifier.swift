import Crypto
import Foundation
import Logging
import Media
import NIOConcurrencyHelpers

/// Checks a publisher's stream key with the source of truth (the coordinator), with a
/// short-lived cache so that publishing keeps working while the coordinator is briefly
/// unreachable (restarting, or partitioned away from this ingest).
///
/// - A key the coordinator accepted is trusted without asking again for `freshFor` (60 s).
/// - When the coordinator cannot be asked (an error or a timeout, not a "no"), a key it
///   accepted within `staleIfUnreachable` (10 min) is still accepted: an encoder that
///   reconnects during a coordinator restart is not cut off. Anything else is refused:
///   an unknown key never gets in because the coordinator is down.
/// - A refused key is remembered for `refusedFor` (5 s), so a misconfigured encoder
///   retrying in a loop does not flood the coordinator.
///
/// Keys are held only as SHA-256 digests.
public final class StreamKeyVerifier: Sendable {
    public enum Decision: Equatable, Sendable {
        case accepted
        /// Accepted from the cache while the coordinator could not be asked.
        case acceptedFromCache
        case refused(String)
    }

    public struct Configuration: Sendable {
        public var freshFor: Duration = .seconds(60)
        public var staleIfUnreachable: Duration = .seconds(600)
        public var refusedFor: Duration = .seconds(5)
        /// Cached answers at most; the oldest go first. Refusals expire after `refusedFor`, so
        /// a flood of made-up keys cannot fill it for longer than that.
        public var maxEntries = 10_000
        public init() {}
    }

    private struct Entry {
        var path: StreamPath
        var accepted: Bool
        var at: ContinuousClock.Instant
    }

    private let configuration: Configuration
    private let verify: @Sendable (StreamPath, String) async throws -> Bool
    private let cache = NIOLockedValueBox<[[UInt8]: Entry]>([:])
    private let logger: Logger

    /// `verify` asks the coordinator; it throws when it cannot get an answer.
    public init(configuration: Configuration = .init(), logger: Logger, verify: @escaping @Sendable (StreamPath, String) async throws -> Bool) {
        self.configuration = configuration
        self.verify = verify
        self.logger = logger
    }

    public func check(_ path: StreamPath, key: String?) async -> Decision {
        if let decided = decisionWithoutWaiting(path, key: key) { return decided }
        guard let key else { return .refused(Self.missing(path)) }
        let digest = Self.digest(path, key)
        let now = ContinuousClock.now
        let cached = cache.withLockedValue { $0[digest] }
        do {
            let accepted = try await verify(path, key)
            remember(Entry(path: path, accepted: accepted, at: now), as: digest)
            return accepted ? .accepted : .refused("stream key refused")
        } catch {
            if let cached, cached.accepted, now - cached.at < configuration.staleIfUnreachable {
                logger.notice("coordinator unreachable; accepting a recently verified stream key", metadata: ["stream": "\(path)", "error": "\(error)"])
                return .acceptedFromCache
            }
            logger.warning("coordinator unreachable; refusing an unverified stream key", metadata: ["stream": "\(path)", "error": "\(error)"])
            return .refused("the stream key cannot be verified now")
        }
    }

    /// The decision where no one needs asking: a missing key, or an answer still fresh in the
    /// cache; nil where the coordinator must be asked. Never waits (SRT's handshake asks it).
    public func decisionWithoutWaiting(_ path: StreamPath, key: String?) -> Decision? {
        guard let key, !key.isEmpty else { return .refused(Self.missing(path)) }
        let now = ContinuousClock.now
        guard let cached = cache.withLockedValue({ $0[Self.digest(path, key)] }) else { return nil }
        if cached.accepted, now - cached.at < configuration.freshFor { return .accepted }
        if !cached.accepted, now - cached.at < configuration.refusedFor { return .refused("stream key refused") }
        return nil
    }

    private static func missing(_ path: StreamPath) -> String {
        "a stream key is required (publish to \(path.name)?key=…)"
    }

    /// Forgets every cached answer for `path`, so that the next publish asks the coordinator:
    /// a key of the stream was revoked (pushed by the coordinator, `IngestNodeAPI.keyRevoked`).
    /// Returns how many entries were dropped.
    @discardableResult
    public func forget(_ path: StreamPath) -> Int {
        cache.withLockedValue { cache in
            let before = cache.count
            cache = cache.filter { $0.value.path != path }
            return before - cache.count
        }
    }

    /// Asks the coordinator again, past the cache, whether `key` is valid for `path`: true or
    /// false as it answers, nil when it cannot be asked. Used after a revocation, where only
    /// a definite "no" may disconnect a publisher.
    public func isStillValid(_ path: StreamPath, key: String) async -> Bool? {
        do {
            let accepted = try await verify(path, key)
            remember(Entry(path: path, accepted: accepted, at: ContinuousClock.now), as: Self.digest(path, key))
            return accepted
        } catch {
            logger.warning("coordinator unreachable while re-checking a stream key after a revocation", metadata: ["stream": "\(path)", "error": "\(error)"])
            return nil
        }
    }

    /// Stores an answer. Bounded: answers past their use are dropped on the way (acceptances
    /// after `staleIfUnreachable`, refusals after `refusedFor`), then the oldest beyond
    /// `maxEntries`.
    private func remember(_ entry: Entry, as digest: [UInt8]) {
        let configuration = self.configuration
        cache.withLockedValue { cache in
            let now = entry.at
            cache = cache.filter { now - $0.value.at < ($0.value.accepted ? configuration.staleIfUnreachable : configuration.refusedFor) }
            let limit = max(configuration.maxEntries, 1)
            if cache[digest] == nil, cache.count >= limit {
                // The oldest tenth at once, so a flood sorts once per limit/10 answers.
                let excess = cache.count - limit + 1 + limit / 10
                for (oldest, _) in cache.sorted(by: { $0.value.at < $1.value.at }).prefix(excess) {
                    cache[oldest] = nil
                }
            }
            cache[digest] = entry
        }
    }

    /// The number of cached answers (for tests and status).
    public var cachedAnswers: Int { cache.withLockedValue { $0.count } }

    private static func digest(_ path: StreamPath, _ key: String) -> [UInt8] {
        Array(SHA256.hash(data: Array("\(path.app)/\(path.name)\u{0}\(key)".utf8)))
    }
}
