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
/// - Publishes of one key at the same moment share one question (an encoder's retries, SRT's
///   handshake and the admission after it): the coordinator is asked once per key at a
///   time, unless a revocation dropped the question in flight (its waiters then ask anew).
///   A question runs to its answer even when its waiters leave: `verify` has a timeout of
///   its own (the bus call's), so questions in flight are bounded by the publishes that
///   started them within it.
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

    /// A question to the coordinator in flight, which later checks of the same key await.
    private struct Question {
        var path: StreamPath
        var id: UInt64
        var answer: Task<Answer, any Error>
    }

    /// The coordinator's answer, and whether its question was still current when it came
    /// (not dropped by a revocation meanwhile).
    private struct Answer: Sendable {
        var accepted: Bool
        var current: Bool
    }

    private struct State {
        var cache: [[UInt8]: Entry] = [:]
        var questions: [[UInt8]: Question] = [:]
        var nextQuestion: UInt64 = 0
    }

    private let configuration: Configuration
    private let verify: @Sendable (StreamPath, String) async throws -> Bool
    private let state = NIOLockedValueBox(State())
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
        do {
            let accepted = try await answer(path, key, digest)
            return accepted ? .accepted : .refused("stream key refused")
        } catch {
            // Read after the failure: a revocation meanwhile has emptied the stream's answers.
            let cached = state.withLockedValue { $0.cache[digest] }
            if let cached, cached.accepted, ContinuousClock.now - cached.at < configuration.staleIfUnreachable {
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
        guard let cached = state.withLockedValue({ $0.cache[Self.digest(path, key)] }) else { return nil }
        if cached.accepted, now - cached.at < configuration.freshFor { return .accepted }
        if !cached.accepted, now - cached.at < configuration.refusedFor { return .refused("stream key refused") }
        return nil
    }

    /// The coordinator's answer for `key`: the question in flight for it, or a new one. The
    /// answer is remembered when it comes, unless the stream was forgotten meanwhile (a
    /// revocation): an answer asked for before it must not be trusted after it, so its
    /// waiters ask once more, in a question of their own.
    private func answer(_ path: StreamPath, _ key: String, _ digest: [UInt8], again: Bool = false) async throws -> Bool {
        let question = state.withLockedValue { state -> Task<Answer, any Error> in
            if let asked = state.questions[digest] { return asked.answer }
            state.nextQuestion &+= 1
            let id = state.nextQuestion
            let asked = ContinuousClock.now
            let answer = Task { [verify, path, key] in
                do {
                    let accepted = try await verify(path, key)
                    let current = self.settle(digest, id, remembering: Entry(path: path, accepted: accepted, at: asked))
                    return Answer(accepted: accepted, current: current)
                } catch {
                    _ = self.settle(digest, id, remembering: nil)
                    throw error
                }
            }
            state.questions[digest] = Question(path: path, id: id, answer: answer)
            return answer
        }
        let answer = try await question.value
        if !answer.current, !again { return try await self.answer(path, key, digest, again: true) }
        return answer.accepted
    }

    /// The question `id` for `digest` is answered: it is no longer in flight, and its answer is
    /// remembered if the question was not dropped meanwhile (`forget`, `isStillValid`).
    /// Returns whether it was still current.
    private func settle(_ digest: [UInt8], _ id: UInt64, remembering entry: Entry?) -> Bool {
        state.withLockedValue { state in
            guard state.questions[digest]?.id == id else { return false }
            state.questions[digest] = nil
            if let entry { remember(entry, as: digest, in: &state) }
            return true
        }
    }

    private static func missing(_ path: StreamPath) -> String {
        "a stream key is required (publish to \(path.name)?key=…)"
    }

    /// Forgets every cached answer for `path`, so that the next publish asks the coordinator:
    /// a key of the stream was revoked (pushed by the coordinator, `IngestNodeAPI.keyRevoked`).
    /// Returns how many entries were dropped.
    @discardableResult
    public func forget(_ path: StreamPath) -> Int {
        state.withLockedValue { state in
            // Questions asked before the revocation are still awaited, but not remembered.
            state.questions = state.questions.filter { $0.value.path != path }
            let before = state.cache.count
            state.cache = state.cache.filter { $0.value.path != path }
            return before - state.cache.count
        }
    }

    /// Asks the coordinator again, past the cache, whether `key` is valid for `path`: true or
    /// false as it answers, nil when it cannot be asked. Used after a revocation, where only
    /// a definite "no" may disconnect a publisher.
    public func isStillValid(_ path: StreamPath, key: String) async -> Bool? {
        let digest = Self.digest(path, key)
        // A question in flight was asked before the revocation: its answer is not remembered.
        state.withLockedValue { _ = $0.questions.removeValue(forKey: digest) }
        do {
            let accepted = try await verify(path, key)
            let entry = Entry(path: path, accepted: accepted, at: ContinuousClock.now)
            state.withLockedValue { remember(entry, as: digest, in: &$0) }
            return accepted
        } catch {
            logger.warning("coordinator unreachable while re-checking a stream key after a revocation", metadata: ["stream": "\(path)", "error": "\(error)"])
            return nil
        }
    }

    /// Stores an answer. Bounded: answers past their use are dropped on the way (acceptances
    /// after `staleIfUnreachable`, refusals after `refusedFor`), then the oldest beyond
    /// `maxEntries`.
    private func remember(_ entry: Entry, as digest: [UInt8], in state: inout State) {
        let configuration = self.configuration
        let now = entry.at
        state.cache = state.cache.filter { now - $0.value.at < ($0.value.accepted ? configuration.staleIfUnreachable : configuration.refusedFor) }
        let limit = max(configuration.maxEntries, 1)
        if state.cache[digest] == nil, state.cache.count >= limit {
            // The oldest tenth at once, so a flood sorts once per limit/10 answers.
            let excess = state.cache.count - limit + 1 + limit / 10
            for (oldest, _) in state.cache.sorted(by: { $0.value.at < $1.value.at }).prefix(excess) {
                state.cache[oldest] = nil
            }
        }
        state.cache[digest] = entry
    }

    /// The number of cached answers (for tests and status).
    public var cachedAnswers: Int { state.withLockedValue { $0.cache.count } }

    /// The questions to the coordinator in flight (for tests).
    var questionsInFlight: Int { state.withLockedValue { $0.questions.count } }

    private static func digest(_ path: StreamPath, _ key: String) -> [UInt8] {
        Array(SHA256.hash(data: Array("\(path.app)/\(path.name)\u{0}\(key)".utf8)))
    }
}
