import AsyncHTTPClient
import Foundation
import JWTKit
import NIOCore
import NIOHTTP1
import Synchronization

/// The signing keys an identity provider publishes at a URL (`jwksURL`), with the
/// application's own (its HS256 secret, its JWKS file) beside them.
///
/// Fetched when the verifier is made, again every `refreshInterval`, and sooner when a token
/// names a key that is not there (a rotation), at most once per `retryInterval`. The keys
/// last fetched stay in use while the URL is down; until a first fetch succeeds, a JWT only
/// the URL's keys could verify is refused as unavailable (a 503, not a "bad token"), with
/// the fetch's error in the log. A fetch has a 5 s timeout and reads at most 1 MiB.
final class RemoteJWKS: Sendable {
    let url: String
    /// The application's own keys, added to every collection made.
    private let jwtSecret: String?
    private let jwksFile: String?
    private let refreshInterval: Duration
    private let retryInterval: Duration

    private struct State {
        var keys: JWTKeyCollection?
        /// The `kid`s of `keys` (jwt-kit would verify a token of an unknown kid with its
        /// default key; the verifier refuses it instead).
        var kids: Set<String> = []
        var fetchedAt: ContinuousClock.Instant?
        var attemptedAt: ContinuousClock.Instant?
        var lastError: String?
        var fetching: Task<Void, Never>?
    }
    private let state = Mutex(State())

    static let maxDocumentBytes = 1 << 20

    init(url: String, jwtSecret: String?, jwksFile: String?, refreshInterval: Duration = .seconds(300), retryInterval: Duration = .seconds(5)) {
        self.url = url
        self.jwtSecret = jwtSecret
        self.jwksFile = jwksFile
        self.refreshInterval = refreshInterval
        self.retryInterval = retryInterval
    }

    /// Why the keys are not there yet, if a fetch failed and none ever succeeded.
    var unavailableReason: String? {
        state.withLock { $0.keys == nil ? $0.lastError : nil }
    }

    /// The keys to verify with now (nil before a first successful fetch); starts a fetch in
    /// the background when the keys are old, or when `missingKey` says a token named a key
    /// they lack and the last attempt is `retryInterval` old.
    /// The `kid`s of the keys fetched last (and of the application's file).
    var kids: Set<String> { state.withLock { $0.kids } }

    func keys(missingKey: Bool = false) -> JWTKeyCollection? {
        let now = ContinuousClock.now
        let (keys, due) = state.withLock { state -> (JWTKeyCollection?, Bool) in
            let stale = state.fetchedAt.map { now - $0 > refreshInterval } ?? true
            let mayRetry = state.attemptedAt.map { now - $0 > retryInterval } ?? true
            return (state.keys, state.fetching == nil && mayRetry && (stale || missingKey))
        }
        if due { startFetch() }
        return keys
    }

    /// Fetches now and waits for it; throws the reason it failed.
    func fetchNow() async throws(TokenConfigurationError) {
        do {
            try await fetch()
        } catch {
            throw TokenConfigurationError(application: "", reason: "\(error)")
        }
    }

    /// Waits for a fetch in flight, if any, at most `limit` (a verification that found its
    /// key missing waits this long for a rotation; the fetch goes on after).
    func settle(within limit: Duration = .seconds(2)) async {
        guard let task = state.withLock({ $0.fetching }) else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await task.value }
            group.addTask { try? await Task.sleep(for: limit) }
            await group.next()
            group.cancelAll()
        }
    }

    private func startFetch() {
        state.withLock { state in
            guard state.fetching == nil else { return }
            // Made under the lock, so its own clearing cannot come before it is stored.
            state.fetching = Task { [weak self] in
                guard let self else { return }
                try? await self.fetch()
                self.state.withLock { $0.fetching = nil }
            }
        }
    }

    private func fetch() async throws {
        state.withLock { $0.attemptedAt = .now }
        do {
            var request = HTTPClientRequest(url: url)
            request.headers.add(name: "Accept", value: "application/json")
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(5))
            guard response.status == .ok else { throw FetchError("answered \(response.status.code)") }
            let body = try await response.body.collect(upTo: Self.maxDocumentBytes)
            let collection = JWTKeyCollection()
            if let jwtSecret { await collection.add(hmac: HMACKey(from: jwtSecret), digestAlgorithm: .sha256) }
            if let jwksFile { try await collection.add(jwksJSON: jwksFile) }
            let document = String(buffer: body)
            do {
                try await collection.add(jwksJSON: document)
            } catch {
                throw FetchError("is not a JWKS document: \(String("\(error)".prefix(120)))")
            }
            let kids = TokenVerifier.kids(ofJWKS: document).union(jwksFile.map(TokenVerifier.kids(ofJWKS:)) ?? [])
            state.withLock { state in
                state.keys = collection
                state.kids = kids
                state.fetchedAt = .now
                state.lastError = nil
            }
        } catch {
            let text = "\(error)"
            let reason = (error as? FetchError)?.reason
                ?? (text.contains("refused") ? "cannot be reached: connection refused"
                    : text.lowercased().contains("timeout") || text.contains("deadline") ? "did not answer within 5 s"
                    : "cannot be fetched: \(text.prefix(120))")
            state.withLock { $0.lastError = "the JWKS at \(url) \(reason)" }
            throw FetchError("\(url) \(reason)")
        }
    }

    private struct FetchError: Error, CustomStringConvertible {
        let reason: String
        init(_ reason: String) { self.reason = reason }
        var description: String { reason }
    }
}
