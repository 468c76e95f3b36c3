import Media
import NIOCore
import Session
import Synchronization
import Testing

@testable import RTMP

/// Every session an RTMP connection is given is started and ended exactly once, in that
/// order, whatever the client and the node do and in whatever order: publish, play, delete
/// the stream, disconnect, take a stream over, be kicked, be shut down. The connections run
/// on `EmbeddedChannel`s against an admission that makes real session handles, as the
/// node's does.
@Suite("RTMP sessions start and end once, in any interleaving")
struct RTMPSessionPairingTests {
    /// Accepts every publish (a later publisher takes a stream over at once) and every play
    /// of a live stream; records each session's events.
    final class RecordingAdmission: ImmediateSessionAdmission, Sendable {
        struct Record {
            var events: [String] = []
            var reason: SessionEndReason?
        }

        private let hubs = Mutex<[StreamPath: StreamHub]>([:])
        private let nextPublisher = Atomic<Int>(1)
        private let records = Mutex<[String: Record]>([:])
        let publishers = Mutex<[PublishSession]>([])
        let viewers = Mutex<[PlaySession]>([])

        private func record(_ id: String, _ event: String, reason: SessionEndReason? = nil) {
            records.withLock { records in
                records[id, default: Record()].events.append(event)
                if let reason { records[id]?.reason = reason }
            }
        }

        private var sink: SessionEventSink {
            { [weak self] event in
                switch event {
                case .publishStarted(let session): self?.record(session.sessionID.rawValue, "start")
                case .publishEnded(let session): self?.record(session.sessionID.rawValue, "end", reason: session.endReason)
                case .playStarted(let session): self?.record(session.id.rawValue, "start")
                case .playEnded(let session): self?.record(session.id.rawValue, "end", reason: session.endReason)
                }
            }
        }

        func recorded() -> [String: Record] { records.withLock { $0 } }

        func publishImmediately(_ request: PublishRequest) -> PublishAnswer {
            let hub = hubs.withLock { hubs in
                if let hub = hubs[request.path], !hub.isEnded { return hub }
                var configuration = HubConfiguration()
                configuration.publisherIdleTakeover = .zero
                let hub = StreamHub(path: .source(request.path), serializers: [RTMPChunkSerializer()], configuration: configuration)
                hubs[request.path] = hub
                return hub
            }
            let id = StreamHub.PublisherID(nextPublisher.add(1, ordering: .relaxed).oldValue)
            let taken = Mutex<PublishSession?>(nil)
            guard case .attached = hub.attachPublisher(id: id, evict: {
                taken.withLock { $0 }?.noteEnding(.takenOver)
                request.evict()
            }) else { return .refused(.badName("taken")) }
            let session = PublishSession(
                path: request.path, hub: hub, id: id, transport: request.transport, remoteAddress: request.remoteAddress,
                query: request.query, traffic: request.traffic, kick: request.kick, evict: request.evict, sink: sink
            )
            taken.withLock { $0 = session }
            publishers.withLock { $0.append(session) }
            session.begin()
            return .accepted(session)
        }

        func playImmediately(_ request: PlayRequest) -> PlayAnswer {
            guard let hub = hubs.withLock({ $0[request.path.primary.stream] }), !hub.isEnded else {
                return .refused(.notFound("no such stream"))
            }
            let session = PlaySession(
                id: request.sessionID, hub: hub, transport: request.transport, remoteAddress: request.remoteAddress,
                query: request.query, traffic: request.traffic, kick: request.kick, sink: sink
            )
            viewers.withLock { $0.append(session) }
            return .accepted(session)
        }
    }

    enum Step: CaseIterable {
        case open, publish, play, media, deleteStream, disconnect, kick, shutDown, advance

        /// Weighted so that runs are mostly sessions and what ends them.
        static let weighted: [Step] = [
            .open, .open, .open, .publish, .publish, .publish, .play, .play, .play, .play, .media, .media,
            .deleteStream, .disconnect, .kick, .kick, .shutDown, .advance,
        ]
    }

    @Test("Random interleavings of four connections on two streams")
    func startsAndEndsPairUp() async throws {
        var totals = (publishers: 0, viewers: 0, kicks: 0)
        for seed in UInt64(0)..<100 {
            let (publishers, viewers, kicks) = try await run(seed: seed)
            totals.publishers += publishers
            totals.viewers += viewers
            totals.kicks += kicks
        }
        // The runs covered what they are meant to: many sessions of both kinds, and kicks.
        #expect(totals.publishers >= 150 && totals.viewers >= 60 && totals.kicks >= 60, "only \(totals)")
    }

    func run(seed: UInt64) async throws -> (Int, Int, Int) {
        let admission = RecordingAdmission()
        // Synchronous, so that the connections' embedded loops are made, used and released on
        // one thread (a suspension may resume the test elsewhere).
        let kicked = try drive(seed: seed, admission: admission)
        return try await check(seed: seed, admission: admission, kicked: kicked)
    }

    /// Runs 40 random steps of up to four connections; returns the ids of sessions kicked.
    func drive(seed: UInt64, admission: RecordingAdmission) throws -> Set<String> {
        var random = SeededGenerator(seed: seed)  // a failing seed replays
        var connections: [EmbeddedRTMPConnection] = []
        var kicked: Set<String> = []
        let names = ["a", "b"]
        for _ in 0..<40 {
            let step = Step.weighted.randomElement(using: &random)!
            let open = connections.filter(\.isOpen)
            switch step {
            case .open where open.count < 4:
                let connection = try EmbeddedRTMPConnection(admission: admission)
                connection.handshake()
                connection.connect()
                connections.append(connection)
            case .publish, .play:
                guard let connection = open.randomElement(using: &random) else { continue }
                connection.createStream()
                let name = names.randomElement(using: &random)!
                if step == .publish { connection.publish(name) } else { connection.play(name) }
            case .media:
                open.randomElement(using: &random)?.sendVideo(timestamp: UInt32.random(in: 0...10_000, using: &random))
            case .deleteStream:
                open.randomElement(using: &random)?.deleteStream()
            case .disconnect:
                open.randomElement(using: &random)?.disconnect()
            case .kick:
                let publishers: [(String, @Sendable (String) -> Void)] = admission.publishers.withLock { sessions in
                    sessions.filter { !$0.hasEnded }.map { session in (session.sessionID.rawValue, { session.kick($0) }) }
                }
                let viewers: [(String, @Sendable (String) -> Void)] = admission.viewers.withLock { sessions in
                    sessions.filter { !$0.hasEnded }.map { session in (session.id.rawValue, { session.kick($0) }) }
                }
                let live = publishers + viewers
                guard let (id, kick) = live.randomElement(using: &random) else { continue }
                kicked.insert(id)
                kick("a test kick")
                for connection in open { connection.settle() }
            case .shutDown:
                guard let connection = open.randomElement(using: &random) else { continue }
                connection.shutDown()
            case .advance:
                for connection in open { connection.advance(.milliseconds(Int64.random(in: 100...1_000, using: &random))) }
            case .open:
                continue
            }
            // Each connection has its own loop: what others asked of it (an eviction, a kick)
            // runs as it settles.
            for connection in connections where connection.isOpen { connection.settle() }
        }
        for connection in connections {
            connection.advance(.seconds(2))  // lingering closes
            connection.disconnect()
        }
        return kicked
    }

    func check(seed: UInt64, admission: RecordingAdmission, kicked: Set<String>) async throws -> (Int, Int, Int) {
        // Every session the connections were given has ended (at once, in the handle) ...
        let publishers = admission.publishers.withLock { $0 }
        let viewers = admission.viewers.withLock { $0 }
        for session in publishers { #expect(session.hasEnded, "seed \(seed): publisher \(session.sessionID) never ended") }
        for session in viewers { #expect(session.hasEnded, "seed \(seed): viewer \(session.id) never ended") }

        // ... and its observers heard a start and an end, once each, in that order.
        let ids = publishers.map(\.sessionID.rawValue) + viewers.map(\.id.rawValue)
        let told = await eventually {
            let records = admission.recorded()
            return ids.allSatisfy { records[$0]?.events.count == 2 }
        }
        #expect(told, "seed \(seed): a session's start or end was not told")
        try await Task.sleep(for: .milliseconds(20))  // and nothing more after
        let records = admission.recorded()
        for id in ids {
            #expect(records[id]?.events == ["start", "end"], "seed \(seed): session \(id) told \(records[id]?.events ?? [])")
            // A kick of a live session says so in its end, whatever closed the connection after.
            if kicked.contains(id) {
                #expect(records[id]?.reason == .kicked("a test kick"), "seed \(seed): kicked session \(id) ended as \(String(describing: records[id]?.reason))")
            }
        }
        return (publishers.count, viewers.count, kicked.count)
    }

    func eventually(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<400 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }
}
