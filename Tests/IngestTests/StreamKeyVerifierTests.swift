import Logging
import Media
import Synchronization
import Testing

@testable import Ingest

/// The ingest's cache of the coordinator's answers: what it may accept without asking, how a
/// revocation empties it, and that a flood of made-up keys cannot grow it without bound.
struct StreamKeyVerifierTests {
    /// A stand-in for the coordinator: a set of valid keys, a switch to make it unreachable,
    /// and a count of the questions it was asked.
    final class Coordinator: Sendable {
        struct Unreachable: Error {}
        private let state = Mutex<(valid: Set<String>, reachable: Bool, asked: Int)>(([], true, 0))

        func allow(_ key: String) { state.withLock { _ = $0.valid.insert(key) } }
        func revoke(_ key: String) { state.withLock { _ = $0.valid.remove(key) } }
        func setReachable(_ reachable: Bool) { state.withLock { $0.reachable = reachable } }
        var asked: Int { state.withLock { $0.asked } }

        func verify(_ path: StreamPath, _ key: String) throws -> Bool {
            try state.withLock { state in
                state.asked += 1
                guard state.reachable else { throw Unreachable() }
                return state.valid.contains(key)
            }
        }
    }

    private func verifier(_ coordinator: Coordinator, maxEntries: Int = 10_000) -> StreamKeyVerifier {
        var configuration = StreamKeyVerifier.Configuration()
        configuration.maxEntries = maxEntries
        return StreamKeyVerifier(configuration: configuration, logger: Logger(label: "test")) { path, key in
            try coordinator.verify(path, key)
        }
    }

    private let cam = try! StreamPath(app: "live", name: "cam")

    @Test func aVerifiedKeyIsTrustedFromTheCacheUntilItsStreamIsForgotten() async throws {
        let coordinator = Coordinator()
        coordinator.allow("k1")
        let keys = verifier(coordinator)
        #expect(await keys.check(cam, key: "k1") == .accepted)
        #expect(await keys.check(cam, key: "k1") == .accepted)
        #expect(coordinator.asked == 1, "the second publish asked the coordinator again")

        // Revoked at the coordinator: the cache would still say yes for 60 s…
        coordinator.revoke("k1")
        #expect(await keys.check(cam, key: "k1") == .accepted)
        // …until the revocation is pushed, which forgets the stream's answers.
        #expect(keys.forget(cam) == 1)
        #expect(await keys.check(cam, key: "k1") == .refused("stream key refused"))
        #expect(coordinator.asked == 2)
    }

    @Test func forgettingAStreamLeavesOtherStreamsCached() async throws {
        let coordinator = Coordinator()
        coordinator.allow("k1")
        let keys = verifier(coordinator)
        let other = try StreamPath(app: "live", name: "other")
        #expect(await keys.check(cam, key: "k1") == .accepted)
        #expect(await keys.check(other, key: "k1") == .accepted)
        #expect(keys.forget(other) == 1)
        #expect(keys.cachedAnswers == 1)
        coordinator.setReachable(false)
        // live/cam's answer survived, so it is still accepted while the coordinator is away.
        #expect(await keys.check(cam, key: "k1") == .accepted)
        #expect(await keys.check(other, key: "k1") == .refused("the stream key cannot be verified now"))
    }

    @Test func reCheckingAfterARevocationSaysNoOnlyWhenTheCoordinatorSaysNo() async throws {
        let coordinator = Coordinator()
        coordinator.allow("k1")
        let keys = verifier(coordinator)
        #expect(await keys.isStillValid(cam, key: "k1") == true)
        coordinator.setReachable(false)
        #expect(await keys.isStillValid(cam, key: "k1") == nil)
        coordinator.setReachable(true)
        coordinator.revoke("k1")
        #expect(await keys.isStillValid(cam, key: "k1") == false)
        // The answer is cached: the next publish with it is refused without asking.
        let asked = coordinator.asked
        #expect(await keys.check(cam, key: "k1") == .refused("stream key refused"))
        #expect(coordinator.asked == asked)
    }

    @Test func aFloodOfMadeUpKeysIsBoundedInCount() async throws {
        let coordinator = Coordinator()
        coordinator.allow("good")
        let keys = verifier(coordinator, maxEntries: 100)
        #expect(await keys.check(cam, key: "good") == .accepted)
        for index in 0..<1_000 {
            _ = await keys.check(cam, key: "guess-\(index)")
        }
        #expect((90...100).contains(keys.cachedAnswers), "\(keys.cachedAnswers) answers cached")
        #expect(coordinator.asked == 1_001)
        // The oldest answer went first: the good key is asked again, and still accepted.
        #expect(await keys.check(cam, key: "good") == .accepted)
        #expect(coordinator.asked == 1_002)
    }

    @Test func aPublishWithoutAKeyIsRefusedWithoutAskingTheCoordinator() async throws {
        let coordinator = Coordinator()
        let keys = verifier(coordinator)
        guard case .refused = await keys.check(cam, key: nil) else {
            Issue.record("a publish without a key was accepted")
            return
        }
        guard case .refused = await keys.check(cam, key: "") else {
            Issue.record("a publish with an empty key was accepted")
            return
        }
        #expect(coordinator.asked == 0)
    }

    @Test func theOwnerOfAKeyedPublishNamesItsKey() {
        #expect(PublishAdmission.key(ofOwner: "key:abc:def") == "abc:def")
        #expect(PublishAdmission.key(ofOwner: "address:127.0.0.1") == nil)
    }
}
