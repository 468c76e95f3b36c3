import Cluster
import Ingest
import Logging
import Media
import Relay
import Session
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
            playback: Playback(registry: registry), keys: keys, logger: logger,
            ladders: ["abr": .default], maxStreams: maxStreams, transcodes: TranscodeSlots(limit: transcodes)
        )
    }

    static func publish(_ admission: NodeAdmission, _ app: String, _ name: String, from address: String = "10.0.0.1:5000", transport: StreamProtocol = .rtmp, query: String = "") async throws -> PublishDecision {
        await admission.publish(PublishRequest(path: try StreamPath(app: app, name: name), query: StreamQuery(query), remoteAddress: address, transport: transport, evict: {}))
    }

    static func play(_ admission: NodeAdmission, _ app: String, _ name: String, transport: StreamProtocol = .httpFLV) async throws -> PlayDecision {
        let requested = try #require(RequestedRendition(app: app, name: name))
        return await admission.play(PlayRequest(path: requested, query: StreamQuery(), remoteAddress: "10.0.0.2:6000", transport: transport))
    }

    @Test func aPublishIsAcceptedIntoTheRegistryAndPlayedOverEveryTransport() async throws {
        let registry = StreamRegistry(serializers: [])
        let admission = Self.admission(registry: registry)
        guard case .accept(let hub, _) = try await Self.publish(admission, "live", "cam") else {
            Issue.record("the first publish of live/cam was refused")
            return
        }
        #expect(hub.path == .source(try StreamPath(app: "live", name: "cam")))
        for transport in [StreamProtocol.rtmp, .httpFLV] {
            guard case .accept(let played) = try await Self.play(admission, "live", "cam", transport: transport) else {
                Issue.record("playing live/cam over \(transport) was refused")
                continue
            }
            #expect(played === hub)
        }
        guard case .refuse(let refusal) = try await Self.play(admission, "live", "nobody") else {
            Issue.record("an unknown stream was played")
            return
        }
        #expect(refusal.kind == .notFound)
    }

    @Test func aSecondLivePublisherAndARelaysPublishersAreRefusedAsBadNames() async throws {
        let registry = StreamRegistry(serializers: [])
        let admission = Self.admission(registry: registry)
        _ = try await Self.publish(admission, "live", "cam")
        guard case .refuse(let taken) = try await Self.publish(admission, "live", "cam", from: "10.9.9.9:1") else {
            Issue.record("a stranger took over a live stream")
            return
        }
        #expect(taken.kind == .badName)

        let relay = Self.admission(registry: registry, ingest: false)
        guard case .refuse(let relayed) = try await Self.publish(relay, "live", "other") else {
            Issue.record("a relay accepted a publisher")
            return
        }
        #expect(relayed.kind == .badName)
    }

    @Test func capacitiesAreRefusedAsUnavailableAndAFreedTranscodeSlotIsReused() async throws {
        let registry = StreamRegistry(serializers: [], publisherGrace: .milliseconds(1))
        let admission = Self.admission(registry: registry, maxStreams: 2, transcodes: 1)
        guard case .accept(let first, let firstID) = try await Self.publish(admission, "abr", "one") else {
            Issue.record("the first abr publish was refused")
            return
        }
        guard case .refuse(let transcodes) = try await Self.publish(admission, "abr", "two") else {
            Issue.record("a second abr stream was accepted over a transcode limit of 1")
            return
        }
        #expect(transcodes.kind == .unavailable)
        _ = try await Self.publish(admission, "live", "a")
        guard case .refuse(let streams) = try await Self.publish(admission, "live", "b") else {
            Issue.record("a third stream was accepted over a stream limit of 2")
            return
        }
        #expect(streams.kind == .unavailable)

        // The abr publisher leaves: its slot is free for the next abr stream once its hub ends.
        first.detachPublisher(id: firstID)
        await admission.unpublished(PublishSession(path: first.stream, hub: first, id: firstID, transport: .rtmp, remoteAddress: "10.0.0.1:5000"))
        var reused = false
        for _ in 0..<100 where !reused {
            try await Task.sleep(for: .milliseconds(10))
            if case .accept = try await Self.publish(admission, "abr", "two") { reused = true }
        }
        #expect(reused, "the transcode slot was not given back")
    }

    /// `abr/demo_240p` is a stream of its own; the rung of `abr/demo` is `abr/demo/240p`, and
    /// the old address falls back to the rung only while no such stream is live. Publishing
    /// such a name takes a stream key: an open ingest refuses it in a ladder's application.
    @Test func aStreamNamedLikeARungIsPublishableWithAKeyAndWinsItsNameOverTheRung() async throws {
        let registry = StreamRegistry(serializers: [])
        guard case .refuse(let open) = try await Self.publish(Self.admission(registry: registry), "abr", "demo_240p") else {
            Issue.record("an open ingest accepted abr/demo_240p, the old address of a rung")
            return
        }
        #expect(open.kind == .badName)
        // Outside a ladder's application the name is an ordinary one.
        guard case .accept = try await Self.publish(Self.admission(registry: registry), "live", "demo_240p") else {
            Issue.record("live/demo_240p was refused")
            return
        }

        let keys = StreamKeyVerifier(logger: Self.logger) { _, key in key == "secret" }
        let admission = Self.admission(registry: registry, keys: keys)
        let demo = try StreamPath(app: "abr", name: "demo")
        _ = try await Self.publish(admission, "abr", "demo", query: "key=secret")
        let rung = StreamHub(path: try RenditionPath(stream: demo, rendition: "240p"), serializers: [])
        await registry.register(rung)

        guard case .accept(let legacy) = try await Self.play(admission, "abr", "demo_240p") else {
            Issue.record("the old rung address did not reach the rung")
            return
        }
        #expect(legacy === rung)

        guard case .accept(let lookalike, _) = try await Self.publish(admission, "abr", "demo_240p", query: "key=secret") else {
            Issue.record("publishing abr/demo_240p was refused")
            return
        }
        #expect(lookalike !== rung)
        guard case .accept(let byName) = try await Self.play(admission, "abr", "demo_240p"),
              case .accept(let byRung) = try await Self.play(admission, "abr/demo", "240p") else {
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
    final class Recorder: SessionObserver, @unchecked Sendable {
        // Touched only from the test's own sequential awaits.
        var events: [String] = []
        func observe(_ event: SessionEvent) async {
            switch event {
            case .publishStarted(let session): events.append("publish+ \(session.path) \(session.transport)")
            case .publishEnded(let session): events.append("publish- \(session.path)")
            case .playStarted(let session): events.append("play+ \(session.path) \(session.transport)")
            case .playEnded(let session): events.append("play- \(session.path)")
            }
        }
    }

    @Test func publishAndPlayStartsAndEndsReachEveryObserverInOrder() async throws {
        let registry = StreamRegistry(serializers: [])
        let first = Recorder()
        let second = Recorder()
        var admission = NodeAdmissionTests.admission(registry: registry)
        admission.observers = [first, second]
        guard case .accept(let hub, let id) = try await NodeAdmissionTests.publish(admission, "live", "cam") else {
            Issue.record("the publish was refused")
            return
        }
        // A refused publish is no session.
        _ = try await NodeAdmissionTests.publish(admission, "live", "cam", from: "10.9.9.9:1")
        let viewer = PlaySession(path: hub.path, transport: .httpFLV, remoteAddress: "10.0.0.2:6000")
        await admission.playStarted(viewer)
        await admission.playEnded(viewer)
        await admission.unpublished(PublishSession(path: hub.stream, hub: hub, id: id, transport: .rtmp, remoteAddress: "10.0.0.1:5000"))
        let expected = ["publish+ live/cam rtmp", "play+ live/cam http-flv", "play- live/cam", "publish- live/cam"]
        #expect(first.events == expected)
        #expect(second.events == expected)
    }
}
