import Media
import NIOCore
import Relay
import Session
import TestSupport
import Testing

/// `Playback`'s codec negotiation in the moment a stream begins: a play that must be
/// negotiated waits for the new stream's video codec instead of taking it for one the
/// client decodes.
@Suite struct PlaybackNegotiationTests {
    static let path = RequestedRendition(app: "live", name: "new")!  // literal, valid by construction

    func publishing(_ registry: StreamRegistry) async throws -> (StreamHub, StreamHub.PublisherID) {
        let (hub, id) = await registry.hubForPublishing(.source(try StreamPath(app: "live", name: "new")))
        _ = hub.attachPublisher(id: id, owner: "test") {}
        return (hub, id)
    }

    func legacyPlay() -> PlayRequest {
        PlayRequest(path: Self.path, query: StreamQuery(), remoteAddress: "10.0.0.2:6000", transport: .rtmp, codecs: .legacy)
    }

    @Test func aLegacyPlayBeforeTheSequenceHeaderWaitsForItAndIsRefusedHEVC() async throws {
        let registry = StreamRegistry(serializers: [])
        let (hub, id) = try await publishing(registry)
        let playback = Playback(registry: registry)
        async let decision = playback.play(legacyPlay())
        // The header comes 200 ms after the play was asked.
        try await Task.sleep(for: .milliseconds(200))
        #expect(hub.publish(try MediaFrame.classified(kind: .video, timestamp: 0, payload: ByteBuffer(bytes: SampleConfigurationRecords.hevc1280x720)), publisher: id))
        guard case .refuse(let refusal) = await decision else {
            Issue.record("a legacy play of an HEVC stream, asked before its sequence header, was accepted")
            return
        }
        #expect(refusal.description.contains("hvc1"))
    }

    @Test func anAudioOnlyStreamIsServedAtOnceOnceItHasSentFiveSecondsOfAudio() async throws {
        let registry = StreamRegistry(serializers: [])
        let (hub, id) = try await publishing(registry)
        #expect(hub.publish(try MediaFrame.classified(kind: .audio, timestamp: 0, payload: ByteBuffer(bytes: SampleConfigurationRecords.aacLC44100Stereo)), publisher: id))
        for index in 0..<250 {
            #expect(hub.publish(try MediaFrame.classified(kind: .audio, timestamp: Int64(index * 23), payload: ByteBuffer(bytes: [0xAF, 0x01, 0x21, 0x00])), publisher: id))
        }
        let clock = ContinuousClock()
        let started = clock.now
        guard case .accept = await Playback(registry: registry).play(legacyPlay()) else {
            Issue.record("a legacy play of an audio-only AAC stream was refused")
            return
        }
        #expect(clock.now - started < .milliseconds(500))
    }

    @Test func aStreamWhoseHeaderNeverComesIsServedAfterTheWait() async throws {
        let registry = StreamRegistry(serializers: [])
        _ = try await publishing(registry)
        let clock = ContinuousClock()
        let started = clock.now
        guard case .accept = await Playback(registry: registry, codecWait: .milliseconds(300)).play(legacyPlay()) else {
            Issue.record("a legacy play of a stream without headers was refused")
            return
        }
        // It waited the whole time (no header came), and no longer.
        let waited = clock.now - started
        #expect(waited >= .milliseconds(300) && waited < .seconds(2))
    }

    @Test func aStreamThatEndsDuringTheWaitEndsTheWait() async throws {
        let registry = StreamRegistry(serializers: [])
        let (hub, _) = try await publishing(registry)
        let clock = ContinuousClock()
        let started = clock.now
        async let decision = Playback(registry: registry, codecWait: .seconds(5)).play(legacyPlay())
        try await Task.sleep(for: .milliseconds(100))
        hub.end()
        _ = await decision
        #expect(clock.now - started < .seconds(2))
    }

    /// H.264 with Opus and no rung in AAC: a player that did not announce Opus still gets the
    /// picture it decodes, the stream as published; one that cannot decode the video is refused.
    @Test func unannouncedAudioWithoutARungIsSentAsPublished() async throws {
        let registry = StreamRegistry(serializers: [])
        let (hub, id) = try await publishing(registry)
        #expect(hub.publish(try MediaFrame.classified(kind: .video, timestamp: 0, payload: ByteBuffer(bytes: SampleConfigurationRecords.avc320x240)), publisher: id))
        let opusHead: [UInt8] = [0x90, 0x4F, 0x70, 0x75, 0x73] + Array("OpusHead".utf8) + [0x01, 0x02, 0x38, 0x01, 0x80, 0xBB, 0x00, 0x00, 0x00, 0x00, 0x00]
        #expect(hub.publish(try MediaFrame.classified(kind: .audio, timestamp: 0, payload: ByteBuffer(bytes: opusHead)), publisher: id))
        guard case .accept(let served) = await Playback(registry: registry).play(legacyPlay()) else {
            Issue.record("a legacy play of H.264 + Opus without a rung was refused")
            return
        }
        #expect(served === hub)
        // HEVC with Opus: the picture is not decodable either.
        let other = StreamRegistry(serializers: [])
        let (hevc, hevcID) = try await publishing(other)
        #expect(hevc.publish(try MediaFrame.classified(kind: .video, timestamp: 0, payload: ByteBuffer(bytes: SampleConfigurationRecords.hevc1280x720)), publisher: hevcID))
        #expect(hevc.publish(try MediaFrame.classified(kind: .audio, timestamp: 0, payload: ByteBuffer(bytes: opusHead)), publisher: hevcID))
        guard case .refuse = await Playback(registry: other).play(legacyPlay()) else {
            Issue.record("a legacy play of HEVC + Opus without a rung was accepted")
            return
        }
    }

    /// An audio-only rendition in Opus (a multitrack publisher's second language) beside an
    /// H.264 + AAC source: a player that did not announce Opus is sent that rendition as
    /// published, not the source's video and other language.
    @Test func anAudioOnlyRenditionInUnannouncedAudioIsSentAsPublishedNotSwapped() async throws {
        let registry = StreamRegistry(serializers: [])
        let stream = try StreamPath(app: "live", name: "new")
        let (source, sourceID) = try await publishing(registry)
        #expect(source.publish(try MediaFrame.classified(kind: .video, timestamp: 0, payload: ByteBuffer(bytes: SampleConfigurationRecords.avc320x240)), publisher: sourceID))
        #expect(source.publish(try MediaFrame.classified(kind: .audio, timestamp: 0, payload: ByteBuffer(bytes: SampleConfigurationRecords.aacLC44100Stereo)), publisher: sourceID))
        let (track, trackID) = await registry.hubForPublishing(try RenditionPath(stream: stream, rendition: "audio1"))
        _ = track.attachPublisher(id: trackID, owner: "test") {}
        let opusHead: [UInt8] = [0x90, 0x4F, 0x70, 0x75, 0x73] + Array("OpusHead".utf8) + [0x01, 0x02, 0x38, 0x01, 0x80, 0xBB, 0x00, 0x00, 0x00, 0x00, 0x00]
        #expect(track.publish(try MediaFrame.classified(kind: .audio, timestamp: 0, payload: ByteBuffer(bytes: opusHead)), publisher: trackID))
        for index in 1...250 {
            #expect(track.publish(try MediaFrame.classified(kind: .audio, timestamp: Int64(index * 20), payload: ByteBuffer(bytes: [0x91, 0x4F, 0x70, 0x75, 0x73, 0xFC])), publisher: trackID))
        }
        let audio1 = RequestedRendition(try RenditionPath(stream: stream, rendition: "audio1"))
        let legacy = PlayRequest(path: audio1, query: StreamQuery(), remoteAddress: "10.0.0.2:6000", transport: .rtmp, codecs: .legacy)
        guard case .accept(let served) = await Playback(registry: registry).play(legacy) else {
            Issue.record("a legacy play of an audio-only Opus rendition was refused")
            return
        }
        #expect(served === track)
    }
}
