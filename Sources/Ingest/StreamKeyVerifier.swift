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
        public init() {}
    }

    private struct Entry {
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
        guard let key, !key.isEmpty else {
            return .refused("a stream key is required (publish to \(path.name)?key=…)")
        }
        let digest = Self.digest(path, key)
        let now = ContinuousClock.now
        let cached = cache.withLockedValue { $0[digest] }
        if let cached {
            if cached.accepted, now - cached.at < configuration.freshFor { return .accepted }
            if !cached.accepted, now - cached.at < configuration.refusedFor { return .refused("stream key refused") }
        }
        do {
            let accepted = try await verify(path, key)
            cache.withLockedValue { cache in
                // Bounded: entries older than the longest use are dropped on the way.
                let horizon = max(configuration.staleIfUnreachable, configuration.refusedFor)
                cache = cache.filter { now - $0.value.at < horizon }
                cache[digest] = Entry(accepted: accepted, at: now)
            }
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

    /// The key of a publish query (`key=…`; `streamKey=…` and `token=…` are accepted too).
    public static func key(fromQuery query: String) -> String? {
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, ["key", "streamKey", "token"].contains(String(parts[0])) else { continue }
            return String(parts[1]).removingPercentEncoding ?? String(parts[1])
        }
        return nil
    }

    private static func digest(_ path: StreamPath, _ key: String) -> [UInt8] {
        Array(SHA256.hash(data: Array("\(path.app)/\(path.name)\u{0}\(key)".utf8)))
    }
}
