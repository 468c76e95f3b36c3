import Logging
import Media
import Session
import Synchronization
import Testing

@testable import Node

/// `NodeDrain`: who is asked to move, when a drain may end, and the admission's refusals
/// while it runs; no sockets.
struct NodeDrainTests {
    /// Records the server URLs a publisher was asked to reconnect to.
    final class Asked: Sendable {
        let urls = Mutex<[String?]>([])
        var requester: ReconnectRequester { { url in self.urls.withLock { $0.append(url) } } }
        var count: Int { urls.withLock { $0.count } }
    }

    static func session(_ name: String, id: StreamHub.PublisherID, asked: Asked?) throws -> PublishSession {
        let path = try StreamPath(app: "live", name: name)
        return PublishSession(path: path, hub: StreamHub(path: .source(path), serializers: []), id: id, transport: .rtmp, remoteAddress: "10.0.0.1:5000", requestReconnect: asked?.requester)
    }

    static func request(grace: Duration = .seconds(30), to target: String? = "rtmp://b:1935") -> NodeDrain.Request {
        NodeDrain.Request(grace: grace, reconnectTo: target, reason: "test")
    }

    @Test func onlyPublishersThatCanBeAskedAreAskedAndEachOnce() async throws {
        let drain = NodeDrain(logger: Logger(label: "drain-tests"))
        let enhanced = Asked()
        await drain.observe(.publishStarted(try Self.session("enhanced", id: 1, asked: enhanced)))
        await drain.observe(.publishStarted(try Self.session("legacy", id: 2, asked: nil)))
        drain.askPublishersToMove()
        #expect(enhanced.count == 0, "asked before any drain")

        #expect(drain.begin(Self.request()))
        #expect(!drain.begin(Self.request()), "a second drain started over the first")
        drain.askPublishersToMove()
        drain.askPublishersToMove()
        #expect(enhanced.urls.withLock { $0 } == ["rtmp://b:1935/live"])
        let status = drain.status()
        #expect(status.draining && status.publishers == 2 && status.publishersAsked == 1)

        // Admitted just as the drain began: asked at once.
        let late = Asked()
        await drain.observe(.publishStarted(try Self.session("late", id: 3, asked: late)))
        #expect(late.count == 1)
    }

    @Test func aDrainEndsWhenItsSessionsLeaveOrItsGraceIsOver() async throws {
        let drain = NodeDrain(logger: Logger(label: "drain-tests"))
        let publisher = try Self.session("cam", id: 1, asked: nil)
        let viewer = PlaySession(hub: publisher.hub, transport: .httpFLV, remoteAddress: "10.0.0.2:6000")
        await drain.observe(.publishStarted(publisher))
        await drain.observe(.playStarted(viewer))
        #expect(!drain.isDone(), "a drain that has not begun is done")
        drain.begin(Self.request(grace: .seconds(30)))
        #expect(!drain.isDone())
        #expect(drain.isDone(now: .now + .seconds(31)), "the grace is over")
        await drain.observe(.publishEnded(publisher))
        #expect(!drain.isDone(), "a viewer is still attached")
        await drain.observe(.playEnded(viewer))
        #expect(drain.isDone())
    }

    @Test func aSecondSignalHurriesTheDrain() async throws {
        let drain = NodeDrain(logger: Logger(label: "drain-tests"))
        await drain.observe(.publishStarted(try Self.session("cam", id: 1, asked: nil)))
        drain.begin(Self.request())
        #expect(!drain.isDone())
        drain.hurry()
        #expect(drain.isDone())
    }

    @Test func whileDrainingTheAdmissionRefusesPublishesAndPlays() async throws {
        let registry = StreamRegistry(serializers: [])
        let drain = NodeDrain(logger: Logger(label: "drain-tests"))
        let admission = NodeAdmissionTests.admission(registry: registry)
        admission.policies.insert(DrainPolicy(drain: drain), at: 0)
        guard try await NodeAdmissionTests.publish(admission, "live", "before").session != nil else {
            Issue.record("a publish before the drain was refused")
            return
        }
        drain.begin(Self.request())
        guard let refusal = try await NodeAdmissionTests.publish(admission, "live", "after").refusal else {
            Issue.record("a publish during the drain was accepted")
            return
        }
        #expect(refusal.kind == .unavailable)
        guard let playRefusal = try await NodeAdmissionTests.play(admission, "live", "before").refusal else {
            Issue.record("a play during the drain was accepted")
            return
        }
        #expect(playRefusal.kind == .unavailable)
    }

    @Test(arguments: [
        ("rtmp://b:1935", "rtmp://b:1935"), ("rtmps://edge.example/", "rtmps://edge.example"), ("RTMP://b", "RTMP://b"),
    ])
    func validTargets(input: String, expected: String) throws {
        #expect(try DrainTarget.validated(input) == expected)
        #expect(NodeDrain.serverURL(expected, app: "live") == expected + "/live")
    }

    @Test(arguments: ["http://b:8080", "rtmp://", "rtmp://b/?key=1", "rtmp://user@b", "b:1935", "", "rtmp://" + String(repeating: "a", count: 600)])
    func invalidTargets(input: String) {
        #expect(throws: DrainTarget.Invalid.self) { try DrainTarget.validated(input) }
    }
}
