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

    /// A slow coordinator: it decides when asked, and its answer (or its failure) arrives
    /// `delay()` later (200 ms unless the test says otherwise, read as it is asked). What is
    /// asked while a question is in flight.
    private func slowVerifier(_ coordinator: Coordinator, delay: @escaping @Sendable () -> Duration = { .milliseconds(200) }) -> StreamKeyVerifier {
        StreamKeyVerifier(logger: Logger(label: "test")) { path, key in
            let answer = Result { try coordinator.verify(path, key) }
            try await Task.sleep(for: delay())
            return try answer.get()
        }
    }

    @Test func publishesOfOneKeyAtOnceShareOneQuestion() async throws {
        let coordinator = Coordinator()
        coordinator.allow("k1")
        let keys = slowVerifier(coordinator)
        // An encoder's retries, or SRT's handshake and the admission after it, at the same moment.
        let decisions = await withTaskGroup(of: (String, StreamKeyVerifier.Decision).self) { group in
            for key in ["k1", "k1", "k1", "k1", "wrong", "wrong"] {
                group.addTask { (key, await keys.check(cam, key: key)) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(decisions.filter { $0.0 == "k1" }.allSatisfy { $0.1 == .accepted })
        #expect(decisions.filter { $0.0 == "wrong" }.allSatisfy { $0.1 == .refused("stream key refused") })
        #expect(coordinator.asked == 2, "the coordinator was asked \(coordinator.asked) times for two keys")
        #expect(keys.questionsInFlight == 0)
        #expect(keys.cachedAnswers == 2)
        // A question that fails fails every check that shared it, and is not kept.
        coordinator.setReachable(false)
        async let first = keys.check(cam, key: "k2")
        async let second = keys.check(cam, key: "k2")
        #expect(await [first, second] == [.refused("the stream key cannot be verified now"), .refused("the stream key cannot be verified now")])
        #expect(coordinator.asked == 3)
        #expect(keys.questionsInFlight == 0)
        coordinator.setReachable(true)
        coordinator.allow("k2")
        #expect(await keys.check(cam, key: "k2") == .accepted)
        #expect(coordinator.asked == 4)
    }

    @Test func anAnswerAskedForBeforeARevocationIsNotRemembered() async throws {
        let coordinator = Coordinator()
        coordinator.allow("k1")
        let delay = Mutex(Duration.milliseconds(200))
        let keys = slowVerifier(coordinator) { delay.withLock { $0 } }
        // Asked (the coordinator says yes), then revoked and pushed while the answer is on its
        // way: the publish waiting on it asks again, in a question of its own, and is refused.
        async let before = keys.check(cam, key: "k1")
        try await Task.sleep(for: .milliseconds(50))
        coordinator.revoke("k1")
        keys.forget(cam)
        #expect(await before == .refused("stream key refused"), "a publish waiting on an answer from before the revocation was let in")
        #expect(coordinator.asked == 2)
        // The refusal is what is remembered.
        #expect(keys.decisionWithoutWaiting(cam, key: "k1") == .refused("stream key refused"))

        // The same for a re-check after a revocation (100 ms), which asks past a slower
        // question in flight (400 ms): the older answer, coming last, must not overwrite it.
        coordinator.allow("k3")
        delay.withLock { $0 = .milliseconds(400) }
        async let stale = keys.check(cam, key: "k3")
        try await Task.sleep(for: .milliseconds(50))
        coordinator.revoke("k3")
        delay.withLock { $0 = .milliseconds(100) }
        #expect(await keys.isStillValid(cam, key: "k3") == false)
        #expect(keys.decisionWithoutWaiting(cam, key: "k3") == .refused("stream key refused"))
        #expect(await stale == .refused("stream key refused"), "a publish waiting on an answer from before the revocation was let in")
        #expect(keys.decisionWithoutWaiting(cam, key: "k3") == .refused("stream key refused"), "the stale answer overwrote the re-check's")
    }

    @Test func theOwnerOfAKeyedPublishNamesItsKey() {
        #expect(PublishAdmission.key(ofOwner: "key:abc:def") == "abc:def")
        #expect(PublishAdmission.key(ofOwner: "address:127.0.0.1") == nil)
    }
}
