import Cluster
import Ingest
import Logging
import Media
import Relay
import Session
import Synchronization
import Testing
import Transcode

@testable import Node

/// `NodeAdmission`, the one path every protocol's publish and play requests take, over a
/// real registry and the ingest's and relay's halves; no sockets.
struct NodeAdmissionTests {
    static let logger = Logger(label: "node-tests")

    static func admission(registry: StreamRegistry, ingest: Bool = true, maxStreams: Int? = nil, transcodes: Int? = nil, keys: StreamKeyVerifier? = nil) -> NodeAdmission {
        NodeAdmission(
            admission: ingest ? PublishAdmission(registry: registry, logger: logger) : nil,
            playback: Playback(registry: registry), logger: logger,
            policies: NodeAdmission.standardPolicies(
                drain: nil, ladders: ["abr": .default], keys: keys, registry: registry, maxStreams: maxStreams,
                transcodes: TranscodeSlots(limit: transcodes)
            )
        )
    }

    static func publish(_ admission: NodeAdmission, _ app: String, _ name: String, from address: String = "10.0.0.1:5000", transport: StreamProtocol = .rtmp, query: String = "") async throws -> PublishAnswer {
        await admission.publish(PublishRequest(path: try StreamPath(app: app, name: name), query: StreamQuery(query), remoteAddress: address, transport: transport, evict: {}))
    }

    static func play(_ admission: NodeAdmission, _ app: String, _ name: String, transport: StreamProtocol = .httpFLV) async throws -> PlayAnswer {
        let requested = try #require(RequestedRendition(app: app, name: name))
        return await admission.play(PlayRequest(path: requested, query: StreamQuery(), remoteAddress: "10.0.0.2:6000", transport: transport))
    }

    @Test func aPublishIsAcceptedIntoTheRegistryAndPlayedOverEveryTransport() async throws {
        let registry = StreamRegistry(serializers: [])
        let admission = Self.admission(registry: registry)
        guard let hub = try await Self.publish(admission, "live", "cam").session?.hub else {
            Issue.record("the first publish of live/cam was refused")
            return
        }
        #expect(hub.path == .source(try StreamPath(app: "live", name: "cam")))
        for transport in [StreamProtocol.rtmp, .httpFLV] {
            guard let played = try await Self.play(admission, "live", "cam", transport: transport).session?.hub else {
                Issue.record("playing live/cam over \(transport) was refused")
                continue
            }
            #expect(played === hub)
        }
        guard let refusal = (try await Self.play(admission, "live", "nobody")).refusal else {
            Issue.record("an unknown stream was played")
            return
        }
        #expect(refusal.kind == .notFound)
    }

    @Test func aSecondLivePublisherAndARelaysPublishersAreRefusedAsBadNames() async throws {
        let registry = StreamRegistry(serializers: [])
        let admission = Self.admission(registry: registry)
        _ = try await Self.publish(admission, "live", "cam")
        guard let taken = (try await Self.publish(admission, "live", "cam", from: "10.9.9.9:1")).refusal else {
            Issue.record("a stranger took over a live stream")
            return
        }
        #expect(taken.kind == .badName)

        let relay = Self.admission(registry: registry, ingest: false)
        guard let relayed = (try await Self.publish(relay, "live", "other")).refusal else {
            Issue.record("a relay accepted a publisher")
            return
        }
        #expect(relayed.kind == .badName)
    }

    @Test func capacitiesAreRefusedAsUnavailableAndAFreedTranscodeSlotIsReused() async throws {
        let registry = StreamRegistry(serializers: [], publisherGrace: .milliseconds(1))
        let admission = Self.admission(registry: registry, maxStreams: 2, transcodes: 1)
        guard let first = try await Self.publish(admission, "abr", "one").session else {
            Issue.record("the first abr publish was refused")
            return
        }
        guard let transcodes = (try await Self.publish(admission, "abr", "two")).refusal else {
            Issue.record("a second abr stream was accepted over a transcode limit of 1")
            return
        }
        #expect(transcodes.kind == .unavailable)
        _ = try await Self.publish(admission, "live", "a")
        guard let streams = (try await Self.publish(admission, "live", "b")).refusal else {
            Issue.record("a third stream was accepted over a stream limit of 2")
            return
        }
        #expect(streams.kind == .unavailable)

        // The abr publisher leaves: its slot is free for the next abr stream once its hub ends.
        first.end(.left)
        var reused = false
        for _ in 0..<100 where !reused {
            try await Task.sleep(for: .milliseconds(10))
            if try await Self.publish(admission, "abr", "two").session != nil { reused = true }
        }
        #expect(reused, "the transcode slot was not given back")
    }

    /// `abr/demo_240p` is a stream of its own; the rung of `abr/demo` is `abr/demo/240p`, and
    /// the old address falls back to the rung only while no such stream is live. Publishing
    /// such a name takes a stream key: an open ingest refuses it in a ladder's application.
    @Test func aStreamNamedLikeARungIsPublishableWithAKeyAndWinsItsNameOverTheRung() async throws {
        let registry = StreamRegistry(serializers: [])
        guard let open = (try await Self.publish(Self.admission(registry: registry), "abr", "demo_240p")).refusal else {
            Issue.record("an open ingest accepted abr/demo_240p, the old address of a rung")
            return
        }
        #expect(open.kind == .badName)
        // Outside a ladder's application the name is an ordinary one.
        guard try await Self.publish(Self.admission(registry: registry), "live", "demo_240p").session != nil else {
            Issue.record("live/demo_240p was refused")
            return
        }

        let keys = StreamKeyVerifier(logger: Self.logger) { _, key in key == "secret" }
        let admission = Self.admission(registry: registry, keys: keys)
        let demo = try StreamPath(app: "abr", name: "demo")
        _ = try await Self.publish(admission, "abr", "demo", query: "key=secret")
        let rung = StreamHub(path: try RenditionPath(stream: demo, rendition: "240p"), serializers: [])
        await registry.register(rung)

        guard let legacy = try await Self.play(admission, "abr", "demo_240p").session?.hub else {
            Issue.record("the old rung address did not reach the rung")
            return
        }
        #expect(legacy === rung)

        guard let lookalike = try await Self.publish(admission, "abr", "demo_240p", query: "key=secret").session?.hub else {
            Issue.record("publishing abr/demo_240p was refused")
            return
        }
        #expect(lookalike !== rung)
        guard let byName = try await Self.play(admission, "abr", "demo_240p").session?.hub,
              let byRung = try await Self.play(admission, "abr/demo", "240p").session?.hub else {
            Issue.record("a path was refused")
            return
        }
        #expect(byName === lookalike)
        #expect(byRung === rung)
    }
}

struct RelayNodeReportTests {
    @Test func aRungsViewersCountForItsStreamAndALookalikeNameIsItsOwnStream() throws {
        let cam = try StreamPath(app: "live", name: "cam")
        let lookalike = try StreamPath(app: "live", name: "cam_480p")
        let reports = RelayNode.reports(viewers: [
            (.source(cam), 1),
            (try RenditionPath(stream: cam, rendition: "720p"), 2),
            (try RenditionPath(stream: cam, rendition: "480p"), 4),
            (.source(lookalike), 3),
        ])
        #expect(reports.map(\.name) == ["cam", "cam_480p"])
        #expect(reports.map(\.viewers) == [7, 3])
    }
}

/// Observers hear every session's start and end from the admission, in order.
struct SessionEventTests {
    final class Recorder: SessionObserver, Sendable {
        private let recorded = Mutex<[String]>([])
        var events: [String] { recorded.withLock { $0 } }
        func observe(_ event: SessionEvent) async {
            recorded.withLock { $0.append(Self.line(event)) }
        }

        static func line(_ event: SessionEvent) -> String {
            switch event {
            case .publishStarted(let session): "publish+ \(session.path) \(session.transport)"
            case .publishEnded(let session): "publish- \(session.path) \(session.endReason.map { "\($0)" } ?? "?")"
            case .playStarted(let session): "play+ \(session.path) \(session.transport)"
            case .playEnded(let session): "play- \(session.path) \(session.endReason.map { "\($0)" } ?? "?")"
            }
        }
    }

    @Test func publishAndPlayStartsAndEndsReachEveryObserverInOrder() async throws {
        let registry = StreamRegistry(serializers: [])
        let first = Recorder()
        let second = Recorder()
        var admission = NodeAdmissionTests.admission(registry: registry)
        admission.observers = [first, second]
        guard let publisher = try await NodeAdmissionTests.publish(admission, "live", "cam").session else {
            Issue.record("the publish was refused")
            return
        }
        // A refused publish is no session.
        _ = try await NodeAdmissionTests.publish(admission, "live", "cam", from: "10.9.9.9:1")
        guard let viewer = try await NodeAdmissionTests.play(admission, "live", "cam").session else {
            Issue.record("the play was refused")
            return
        }
        await viewer.start()
        viewer.end(.left)
        viewer.end(.kicked("again"))  // only the first end counts
        try await Self.settle { first.events.count == 3 }
        publisher.end(.left)
        publisher.end(.left)
        try await Self.settle { first.events.count == 4 && second.events.count == 4 }
        let expected = ["publish+ live/cam rtmp", "play+ live/cam http-flv", "play- live/cam left", "publish- live/cam left"]
        #expect(first.events == expected)
        #expect(second.events == expected)
        // An accepted play that never started tells nothing when it ends.
        guard let unstarted = try await NodeAdmissionTests.play(admission, "live", "cam").session else {
            Issue.record("the second play was refused")
            return
        }
        unstarted.end(.left)
        try await Task.sleep(for: .milliseconds(50))
        #expect(first.events == expected)
    }

    /// Ends are told from a Task: waits (bounded) until `condition` holds.
    static func settle(_ condition: () -> Bool) async throws {
        for _ in 0..<200 where !condition() {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(condition())
    }
}

extension PublishAnswer {
    var session: PublishSession? { if case .accepted(let session) = self { session } else { nil } }
    var refusal: SessionRefusal? { if case .refused(let refusal) = self { refusal } else { nil } }
}

extension PlayAnswer {
    var session: PlaySession? { if case .accepted(let session) = self { session } else { nil } }
    var refusal: SessionRefusal? { if case .refused(let refusal) = self { refusal } else { nil } }
}
