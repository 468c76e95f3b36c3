import Ingest
import Logging
import Media
import NIOConcurrencyHelpers
import Relay
import Session
import Testing
import Transcode

@testable import Node

/// A decision that never comes refuses the session after the admission timeout, and one that
/// comes too late is undone.
struct TimeLimitedAdmissionTests {
    /// The node's admission with a stream-key policy whose coordinator never answers (a hung
    /// hook would look the same): the publisher is refused as unavailable within the timeout,
    /// and told why.
    @Test func aPolicyThatNeverAnswersRefusesTheSessionAfterTheTimeout() async throws {
        let registry = StreamRegistry(serializers: [])
        let keys = StreamKeyVerifier(logger: NodeAdmissionTests.logger) { _, _ in
            try await Task.sleep(for: .seconds(3600))
            return true
        }
        let timedOut = NIOLockedValueBox<[String]>([])
        let admission = TimeLimitedAdmission(NodeAdmissionTests.admission(registry: registry, keys: keys), timeout: .milliseconds(200)) { kind, path in
            timedOut.withLockedValue { $0.append("\(kind) \(path)") }
        }
        let start = ContinuousClock.now
        let decision = await admission.publish(PublishRequest(path: try StreamPath(app: "live", name: "cam"), query: StreamQuery("key=k"), remoteAddress: "10.0.0.1:1", transport: .rtmp, evict: {}))
        let elapsed = ContinuousClock.now - start
        guard case .refused(let refusal) = decision else {
            Issue.record("a publish without a decision was accepted")
            return
        }
        #expect(refusal.kind == .unavailable)
        #expect(refusal.description.contains("no admission decision"))
        #expect(elapsed >= .milliseconds(200) && elapsed < .seconds(2), "refused after \(elapsed)")
        #expect(timedOut.withLockedValue { $0 } == ["publish live/cam"])
        #expect(await registry.hub(for: try StreamPath(app: "live", name: "cam"))?.hasPublisher != true)
    }

    /// A policy that answers "accept" after the client was refused: the stream is given back
    /// (its session ended, which detaches it and tells the observers), so that the client's
    /// retry can publish it.
    @Test func aLateAcceptanceIsUndone() async throws {
        let registry = StreamRegistry(serializers: [])
        let recorder = SessionEventTests.Recorder()
        var inner = NodeAdmissionTests.admission(registry: registry)
        inner.observers = [recorder]
        let slow = SlowAdmission(inner: inner, delay: .milliseconds(400))
        let admission = TimeLimitedAdmission(slow, timeout: .milliseconds(100))
        let path = try StreamPath(app: "live", name: "late")
        let request = PublishRequest(path: path, query: StreamQuery(), remoteAddress: "10.0.0.1:1", transport: .rtmp, evict: {})
        guard case .refused = await admission.publish(request) else {
            Issue.record("the slow decision was not refused at the timeout")
            return
        }
        // The late acceptance lands, and is undone.
        let undone = await eventuallyTrue(within: .seconds(3)) { recorder.events.count == 2 }
        #expect(undone)
        #expect(recorder.events == ["publish+ live/late rtmp", "publish- live/late \(SessionEndReason.lateDecision)"])
        #expect(await registry.hub(for: path)?.hasPublisher != true)
        // A quick decision goes through untouched.
        let quick = TimeLimitedAdmission(NodeAdmissionTests.admission(registry: registry), timeout: .seconds(2))
        guard case .accepted = await quick.publish(request) else {
            Issue.record("the retry was refused")
            return
        }
    }

    func eventuallyTrue(within limit: Duration, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return condition()
    }
}

/// An admission that decides after `delay`.
final class SlowAdmission: SessionAdmission {
    let inner: NodeAdmission
    let delay: Duration

    init(inner: NodeAdmission, delay: Duration) {
        self.inner = inner
        self.delay = delay
    }

    func publish(_ request: PublishRequest) async -> PublishAnswer {
        try? await Task.sleep(for: delay)
        return await inner.publish(request)
    }

    func play(_ request: PlayRequest) async -> PlayAnswer { await inner.play(request) }
}
