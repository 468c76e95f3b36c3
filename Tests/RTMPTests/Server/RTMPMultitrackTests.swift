import AMF0
import Media
import NIOCore
import Session
import Synchronization
import Testing

@testable import RTMP

/// A multitrack publisher on an `EmbeddedChannel`, against an admission that opens or
/// refuses its tracks as the test says: a refused track is asked for again on its later
/// keyframes (encoders send a track's configuration once), at growing intervals; the
/// stream's metadata lists the open tracks even when the publisher's own fills its limit.
@Suite struct RTMPMultitrackTests {
    /// Accepts every publish; a track is refused while its count of refusals to give lasts,
    /// then opened with a hub of its own. Counts the asks per rendition.
    final class TrackAdmission: ImmediateSessionAdmission, Sendable {
        private struct State {
            var refusalsLeft: [String: Int] = [:]
            var asked: [String: Int] = [:]
            var hubs: [String: StreamHub] = [:]
            var streams: [StreamPath: StreamHub] = [:]
            var next = 1
        }
        private let state = Mutex(State())

        init(refusing refusals: [String: Int] = [:]) {
            state.withLock { $0.refusalsLeft = refusals }
        }

        func asked(_ rendition: String) -> Int { state.withLock { $0.asked[rendition] ?? 0 } }
        func trackHub(_ rendition: String) -> StreamHub? { state.withLock { $0.hubs[rendition] } }
        func streamHub(_ path: StreamPath) -> StreamHub? { state.withLock { $0.streams[path] } }

        private func nextID() -> StreamHub.PublisherID {
            state.withLock { state in
                state.next += 1
                return StreamHub.PublisherID(state.next)
            }
        }

        func publishImmediately(_ request: PublishRequest) -> PublishAnswer {
            let hub = StreamHub(path: .source(request.path), serializers: [RTMPChunkSerializer()])
            let id = nextID()
            guard case .attached = hub.attachPublisher(id: id, evict: request.evict) else { return .refused(.badName("taken")) }
            state.withLock { $0.streams[request.path] = hub }
            let session = PublishSession(
                path: request.path, hub: hub, id: id, transport: request.transport, remoteAddress: request.remoteAddress,
                query: request.query, traffic: request.traffic, kick: request.kick, evict: request.evict
            )
            session.begin()
            return .accepted(session)
        }

        func playImmediately(_ request: PlayRequest) -> PlayAnswer {
            .refused(.notFound("no players here"))
        }

        func publishTrackImmediately(of publisher: PublishSession, rendition: String) -> PublishAnswer {
            let refuse = state.withLock { state in
                state.asked[rendition, default: 0] += 1
                guard let left = state.refusalsLeft[rendition], left > 0 else { return false }
                state.refusalsLeft[rendition] = left - 1
                return true
            }
            if refuse { return .refused(.unavailable("no slot for \(rendition) yet")) }
            guard let path = try? RenditionPath(stream: publisher.path, rendition: rendition) else { return .refused(.badName(rendition)) }
            let hub = StreamHub(path: path, serializers: [RTMPChunkSerializer()])
            let id = nextID()
            guard case .attached = hub.attachPublisher(id: id, evict: {}) else { return .refused(.badName("taken")) }
            state.withLock { $0.hubs[rendition] = hub }
            let session = PublishSession(
                path: publisher.path, hub: hub, id: id, transport: publisher.transport, remoteAddress: publisher.remoteAddress, parent: publisher
            )
            session.begin()
            return .accepted(session)
        }
    }

    /// Track 1's sequence start as PyAV's FFmpeg 8 wrote it (a OneTrack tag: 320x180 H.264).
    static let sequenceStart: [UInt8] = {
        let hex = Array("960061766331010164000dffe1001a6764000dacd941419f9f0110000003001000000303c0f142996001000668ebe3cb22c0fdf8f800")
        return stride(from: 0, to: hex.count, by: 2).compactMap { UInt8(String(hex[$0...$0 + 1]), radix: 16) }
    }()
    /// Track 1's keyframe (OneTrack, CodedFrames, CTS 0, one IDR NAL unit).
    static let keyframe: [UInt8] = [0x96, 0x01] + Array("avc1".utf8) + [0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x65]
    /// Track 1's inter frame (OneTrack, CodedFrames, CTS 0, one non-IDR NAL unit).
    static let interFrame: [UInt8] = [0xA6, 0x01] + Array("avc1".utf8) + [0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x41]
    /// Track 1's sequence end (OneTrack, SequenceEnd).
    static let sequenceEnd: [UInt8] = [0x96, 0x02] + Array("avc1".utf8) + [0x01]

    static func publisher(_ admission: TrackAdmission, configuration: RTMPServerConfiguration = RTMPServerConfiguration()) throws -> EmbeddedRTMPConnection {
        let connection = try EmbeddedRTMPConnection(admission: admission, configuration: configuration)
        connection.handshake()
        connection.connect()
        connection.createStream()
        connection.publish("cam")
        #expect(connection.statusCodes.last == "NetStream.Publish.Start")
        return connection
    }

    static func send(_ payload: [UInt8], on connection: EmbeddedRTMPConnection, at timestamp: UInt32) {
        connection.deliver(RTMPMessage(type: .video, streamID: connection.streamID, timestamp: timestamp, chunkStreamID: 6, payload: ByteBuffer(bytes: payload)))
    }

    @Test func aRefusedTrackIsAskedForAgainOnItsKeyframesAtGrowingIntervals() throws {
        let admission = TrackAdmission(refusing: ["track1": 2])
        let connection = try Self.publisher(admission)
        var time: UInt32 = 0
        func keyframe(after delay: Int64) {
            connection.advance(.milliseconds(delay))
            time += UInt32(delay)
            Self.send(Self.keyframe, on: connection, at: time)
        }
        Self.send(Self.sequenceStart, on: connection, at: 0)
        #expect(admission.asked("track1") == 1)
        // Refused: not asked again before a second has passed, though keyframes come…
        keyframe(after: 500)
        #expect(admission.asked("track1") == 1)
        // …then asked with the configuration the encoder sent once, and refused again.
        keyframe(after: 600)
        #expect(admission.asked("track1") == 2)
        // The next ask waits two seconds.
        keyframe(after: 1500)
        #expect(admission.asked("track1") == 2)
        keyframe(after: 600)
        #expect(admission.asked("track1") == 3)
        let hub = try #require(admission.trackHub("track1"), "the track never opened")
        #expect(hub.configurationRecords.video != nil, "the opened track's hub has no configuration")
        // It started with the keyframe that asked for it, not a GOP later; the next follows.
        #expect(hub.statistics.videoFramesIn == 1, "the keyframe that asked for the track did not reach its hub")
        keyframe(after: 100)
        #expect(hub.statistics.videoFramesIn == 2)
        #expect(admission.asked("track1") == 3)
        // The stream's metadata lists it.
        let metadata = try #require(admission.streamHub(try StreamPath(app: "live", name: "cam"))?.configurationRecords.metadata)
        #expect(TrackIdInfoMaps.renditions(inMetadataBody: metadata.payload) == ["track1"])
        connection.disconnect()
    }

    /// An encoder that sends its track's configuration again while the track waits out its
    /// back-off: that configuration is the one asked with when the wait ends, on a keyframe.
    @Test func aConfigurationSentDuringTheBackOffIsKeptForTheNextAsk() throws {
        let admission = TrackAdmission(refusing: ["track1": 1])
        let connection = try Self.publisher(admission)
        Self.send(Self.sequenceStart, on: connection, at: 0)
        #expect(admission.asked("track1") == 1)
        connection.advance(.milliseconds(500))
        Self.send(Self.sequenceStart, on: connection, at: 500)
        #expect(admission.asked("track1") == 1, "asked again within the back-off")
        connection.advance(.milliseconds(600))
        Self.send(Self.keyframe, on: connection, at: 1100)
        #expect(admission.asked("track1") == 2, "the configuration sent during the back-off was lost")
        #expect(admission.trackHub("track1")?.configurationRecords.video != nil)
        connection.disconnect()
    }

    /// Kept configurations are bounded in count and size: a publisher that cycles through
    /// track ids, or sends a huge "configuration", cannot make the connection hold more.
    @Test func keptConfigurationsAreBounded() throws {
        let path = try StreamPath(app: "live", name: "cam")
        let hub = StreamHub(path: .source(path), serializers: [])
        let publish = RTMPServerConnectionHandler.PublishContext(session: PublishSession(path: path, hub: hub, id: 1, transport: .rtmp, remoteAddress: "192.0.2.7"))
        let header = try MediaFrame.classified(kind: .video, timestamp: 0, payload: ByteBuffer(bytes: [0x17, 0x00, 0x00, 0x00, 0x00, 0x01]))
        for id in UInt8(1)...UInt8(100) {
            publish.keep(header, for: .init(kind: id % 2 == 0 ? .video : .audio, id: id))
        }
        #expect(publish.keptTrackConfigurations.count == RTMPServerConnectionHandler.PublishContext.mostKeptConfigurations)
        let huge = MediaFrame(kind: .video, timestamp: 0, isKeyframe: true, payload: ByteBuffer(repeating: 0, count: 65 * 1024))
        let key = RTMPServerConnectionHandler.PublishContext.TrackKey(kind: .video, id: 100)
        #expect(publish.keptTrackConfigurations[key] != nil)
        publish.keep(huge, for: key)
        #expect(publish.keptTrackConfigurations[key] == nil, "a 65 KiB configuration was kept")
    }

    @Test func aRefusedTrackTheEncoderEndsIsNotAskedForAgain() throws {
        let admission = TrackAdmission(refusing: ["track1": 1])
        let connection = try Self.publisher(admission)
        Self.send(Self.sequenceStart, on: connection, at: 0)
        #expect(admission.asked("track1") == 1)
        Self.send(Self.sequenceEnd, on: connection, at: 40)
        connection.advance(.seconds(5))
        Self.send(Self.keyframe, on: connection, at: 5_040)
        #expect(admission.asked("track1") == 1, "a track its encoder ended was asked for again")
        // A new sequence start asks for it again, at once.
        Self.send(Self.sequenceStart, on: connection, at: 5_080)
        #expect(admission.asked("track1") == 2)
        #expect(admission.trackHub("track1") != nil)
        connection.disconnect()
    }

    @Test func theRetryDelayDoublesToThirtySeconds() {
        let delays = (0...8).map { RTMPServerConnectionHandler.retryDelay(after: $0) }
        #expect(delays == [1, 1, 2, 4, 8, 16, 30, 30, 30].map { TimeAmount.seconds($0) })
    }

    /// The publisher's metadata just within its byte limit: the node's track maps, which it
    /// bounds itself, do not push it over.
    @Test func metadataAtTheByteLimitStillListsTheTracks() throws {
        var configuration = RTMPServerConfiguration()
        configuration.maxMetadataBytes = 400
        let admission = TrackAdmission()
        let connection = try Self.publisher(admission, configuration: configuration)
        // A title padded so that the message is exactly at the limit.
        func message(_ padding: Int) -> ByteBuffer {
            var payload = ByteBuffer()
            DataMessage(name: DataMessage.setDataFrame, values: [
                .string(DataMessage.onMetaData),
                .ecmaArray([AMF0Property("title", .string(String(repeating: "t", count: padding))), AMF0Property("width", .number(320))]),
            ]).encode(into: &payload)
            return payload
        }
        let padding = try #require((0..<400).first { message($0).readableBytes == configuration.maxMetadataBytes })
        connection.deliver(RTMPMessage(type: .dataAMF0, streamID: connection.streamID, timestamp: 0, chunkStreamID: 5, payload: message(padding)))
        let hub = try #require(admission.streamHub(try StreamPath(app: "live", name: "cam")))
        #expect(hub.configurationRecords.metadata != nil, "the publisher's metadata at the limit was dropped")

        Self.send(Self.sequenceStart, on: connection, at: 0)
        let body = try #require(hub.configurationRecords.metadata?.payload)
        #expect(body.readableBytes > configuration.maxMetadataBytes, "the maps should take the body past the publisher's limit")
        #expect(body.readableBytes <= configuration.maxMetadataBytes + TrackIdInfoMaps.mostEncodedBytes)
        #expect(TrackIdInfoMaps.renditions(inMetadataBody: body) == ["track1"])
        let value = try #require(try DataMessage(from: body).metadata)
        #expect(value["title"]?.stringValue?.count == padding, "the publisher's metadata did not go with the maps")
        connection.disconnect()
    }

    /// A track admission whose answers the test gives (a coordinator's, on another node):
    /// publishes and plays are answered at once, track asks when `answerTracks` is called.
    final class HeldTrackAdmission: SessionAdmission {
        let inner: TrackAdmission
        private let held = Mutex<[(promise: EventLoopPromise<PublishAnswer>, publisher: PublishSession, rendition: String)]>([])

        init(_ inner: TrackAdmission) { self.inner = inner }

        func publish(_ request: PublishRequest) async -> PublishAnswer { inner.publishImmediately(request) }
        func play(_ request: PlayRequest) async -> PlayAnswer { inner.playImmediately(request) }
        func publish(_ request: PublishRequest, on eventLoop: any EventLoop) -> EventLoopFuture<PublishAnswer> {
            eventLoop.makeSucceededFuture(inner.publishImmediately(request))
        }
        func play(_ request: PlayRequest, on eventLoop: any EventLoop) -> EventLoopFuture<PlayAnswer> {
            eventLoop.makeSucceededFuture(inner.playImmediately(request))
        }
        func publishTrack(of publisher: PublishSession, rendition: String, on eventLoop: any EventLoop) -> EventLoopFuture<PublishAnswer> {
            let promise = eventLoop.makePromise(of: PublishAnswer.self)
            held.withLock { $0.append((promise, publisher, rendition)) }
            return promise.futureResult
        }

        /// Answers every track ask waiting.
        func answerTracks() {
            for ask in held.withLock({ asks in defer { asks = [] }; return asks }) {
                ask.promise.succeed(inner.publishTrackImmediately(of: ask.publisher, rendition: ask.rendition))
            }
        }
    }

    /// What the encoder sends while a track is asked for.
    enum WhileAsking: CaseIterable, Sendable {
        case nothing, interFrame, interFrameThenKeyframe
    }

    /// A refused track asked for again by a keyframe starts with that keyframe when the
    /// answer opens it, however long the answer took, unless another frame of the track came
    /// while it was asked for: then with a later keyframe that came meanwhile, or at its next
    /// keyframe, never mid-GOP.
    @Test(arguments: WhileAsking.allCases)
    func aTrackOpenedOnARetryStartsWithTheKeyframeThatAskedUnlessAFrameCameBetween(whileAsking: WhileAsking) throws {
        let tracks = TrackAdmission(refusing: ["track1": 1])
        let admission = HeldTrackAdmission(tracks)
        let connection = try EmbeddedRTMPConnection(admission: admission, configuration: RTMPServerConfiguration())
        connection.handshake()
        connection.connect()
        connection.createStream()
        connection.publish("cam")
        #expect(connection.statusCodes.last == "NetStream.Publish.Start")
        Self.send(Self.sequenceStart, on: connection, at: 0)
        admission.answerTracks()
        #expect(tracks.asked("track1") == 1)
        #expect(tracks.trackHub("track1") == nil, "refused once")

        connection.advance(.milliseconds(1100))
        Self.send(Self.keyframe, on: connection, at: 1100)
        #expect(tracks.asked("track1") == 1, "asked before the answer was given")
        if whileAsking != .nothing { Self.send(Self.interFrame, on: connection, at: 1133) }
        if whileAsking == .interFrameThenKeyframe { Self.send(Self.keyframe, on: connection, at: 1150) }
        admission.answerTracks()
        #expect(tracks.asked("track1") == 2)
        let hub = try #require(tracks.trackHub("track1"), "the track did not open on the second ask")
        let started = whileAsking != .interFrame
        #expect(hub.statistics.videoFramesIn == (started ? 1 : 0))
        Self.send(Self.interFrame, on: connection, at: 1166)
        #expect(hub.statistics.videoFramesIn == (started ? 2 : 0), "an inter frame went in before the track's first keyframe")
        Self.send(Self.keyframe, on: connection, at: 1200)
        #expect(hub.statistics.videoFramesIn == (started ? 3 : 1))
        connection.disconnect()
    }
}
