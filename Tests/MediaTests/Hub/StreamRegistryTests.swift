import NIOCore
import Testing

@testable import Media

/// `StreamRegistry.forget`: a relay ends the mirror hubs nobody watches and takes them out
/// of the registry, which must not keep one ended hub per path ever mirrored, nor lose a
/// hub that has taken the path over since.
@Suite struct StreamRegistryTests {
    static let path = try! StreamPath(app: "live", name: "registry")  // literal, valid by construction

    /// A hub as `BusStreamSource` makes a mirror: from the registry, with the bus as publisher.
    func mirror(in registry: StreamRegistry) async -> StreamHub {
        let (hub, id) = await registry.hubForPublishing(Self.path)
        let result = hub.attachPublisher(id: id, owner: "bus") {}
        #expect(result == .attached(replacedIdle: false))
        return hub
    }

    @Test func forgottenEndedHubIsGone() async {
        let registry = StreamRegistry(serializers: [])
        let hub = await mirror(in: registry)
        hub.end()
        // Ended, so no lookup finds it, but the entry is still there.
        let found = await registry.hub(for: Self.path)
        #expect(found == nil)
        #expect(await registry.entryCount == 1)

        await registry.forget(.source(Self.path), hub: hub)
        #expect(await registry.entryCount == 0)
        let streams = await registry.streams
        #expect(streams.isEmpty)
    }

    @Test func forgettingAnotherHubRemovesNothing() async {
        let registry = StreamRegistry(serializers: [])
        let first = await mirror(in: registry)
        first.end()
        // A new mirror of the same path replaces the ended one before the old one is forgotten.
        let second = await mirror(in: registry)
        #expect(first !== second)

        await registry.forget(.source(Self.path), hub: first)
        let current = await registry.hub(for: Self.path)
        #expect(current === second)
        #expect(await registry.entryCount == 1)

        // Nor does a hub that was never registered, live or not.
        let stranger = StreamHub(path: Self.path, serializers: [])
        await registry.forget(.source(Self.path), hub: stranger)
        let stillCurrent = await registry.hub(for: Self.path)
        #expect(stillCurrent === second)
        #expect(await registry.entryCount == 1)
    }
}

/// `StreamRegistry.decodableRendition`: what a player that did not announce a stream's codec
/// (an HEVC source, a legacy RTMP player) is sent instead: the tallest H.264 rendition.
@Suite struct DecodableRenditionTests {
    static let stream = try! StreamPath(app: "abr", name: "hevc")  // literal, valid by construction

    /// A rendition of `stream` whose publisher sent `sequenceHeader` (an FLV video tag body)
    /// and `audioHeader` (an FLV audio tag body), if any.
    @discardableResult
    func rendition(_ name: String?, _ sequenceHeader: ByteBuffer, audio audioHeader: ByteBuffer? = nil, in registry: StreamRegistry) async throws -> StreamHub {
        let path = try name.map { try RenditionPath(stream: Self.stream, rendition: $0) } ?? .source(Self.stream)
        let (hub, id) = await registry.hubForPublishing(path)
        _ = hub.attachPublisher(id: id, owner: "test") {}
        let frame = try MediaFrame.classified(kind: .video, timestamp: 0, payload: sequenceHeader)
        #expect(hub.publish(frame, publisher: id))
        if let audioHeader {
            #expect(hub.publish(try MediaFrame.classified(kind: .audio, timestamp: 0, payload: audioHeader), publisher: id))
        }
        return hub
    }

    /// An enhanced-RTMP HEVC sequence start: `[KeyFrame | SequenceStart]`, `hvc1`, hvcC.
    static var hevcSequenceStart: ByteBuffer {
        var buffer = ByteBuffer(bytes: [0x90, 0x68, 0x76, 0x63, 0x31])
        var record = ByteBuffer(hex: Vectors.hevcMain720Record)
        buffer.writeBuffer(&record)
        return buffer
    }

    @Test func aLegacyPlayerOfAnHEVCSourceGetsTheTallestH264Rung() async throws {
        let registry = StreamRegistry(serializers: [])
        let source = try await rendition(nil, Self.hevcSequenceStart, in: registry)
        #expect(source.videoCodec == .hevc)
        #expect(await registry.decodableRendition(of: Self.stream, for: .legacy) == nil)

        let low = try await rendition("360p", ByteBuffer(hex: Vectors.avcBaseline360TagBody), in: registry)
        let high = try await rendition("720p", ByteBuffer(hex: Vectors.avcHigh720TagBody), in: registry)
        #expect(low.videoCodec == .avc && low.avcPictureHeight == 360 && high.avcPictureHeight == 720)
        #expect(await registry.decodableRendition(of: Self.stream, for: .legacy) === high)
        high.end()
        #expect(await registry.decodableRendition(of: Self.stream, for: .legacy) === low)
        // A taller rung whose publisher left (waiting out its grace period) loses to a live one.
        let (stale, staleID) = await registry.hubForPublishing(try RenditionPath(stream: Self.stream, rendition: "1080p"))
        _ = stale.attachPublisher(id: staleID, owner: "test") {}
        #expect(stale.publish(try MediaFrame.classified(kind: .video, timestamp: 0, payload: ByteBuffer(hex: Vectors.avcMain1080TagBody)), publisher: staleID))
        #expect(await registry.decodableRendition(of: Self.stream, for: .legacy) === stale)
        stale.detachPublisher(id: staleID)
        #expect(await registry.decodableRendition(of: Self.stream, for: .legacy) === low)
        // Another stream's rungs are never offered.
        #expect(await registry.decodableRendition(of: try StreamPath(app: "abr", name: "other"), for: .legacy) == nil)
    }

    /// An enhanced-RTMP Opus sequence start: `[ExHeader | SequenceStart]`, `Opus`, OpusHead
    /// (stereo, pre-skip 312, 48 kHz, mapping family 0).
    static let opusSequenceStart = ByteBuffer(bytes: [0x90, 0x4F, 0x70, 0x75, 0x73] + Array("OpusHead".utf8) + [0x01, 0x02, 0x38, 0x01, 0x80, 0xBB, 0x00, 0x00, 0x00, 0x00, 0x00])
    /// A legacy AAC sequence header: `0xAF 0x00`, AAC-LC 44.1 kHz stereo.
    static let aacSequenceHeader = ByteBuffer(bytes: [0xAF, 0x00, 0x12, 0x10])

    @Test func aPlayerThatDidNotAnnounceOpusGetsTheAACRung() async throws {
        let registry = StreamRegistry(serializers: [])
        let source = try await rendition(nil, ByteBuffer(hex: Vectors.avcHigh720TagBody), audio: Self.opusSequenceStart, in: registry)
        #expect(source.videoCodec == .avc && source.audioCodec == .opus)
        let opus = ClientCodecs(video: .legacy, audio: AudioCodecSupport(fourCCs: ["Opus"]))
        #expect(opus.decodes(video: .avc, audio: .opus) && !ClientCodecs.legacy.decodes(video: .avc, audio: .opus))
        // No rung yet: a legacy player is offered nothing (the source's Opus it cannot decode).
        #expect(await registry.decodableRendition(of: Self.stream, for: .legacy) == nil)
        let rung = try await rendition("360p", ByteBuffer(hex: Vectors.avcBaseline360TagBody), audio: Self.aacSequenceHeader, in: registry)
        #expect(rung.audioCodec == .aac)
        #expect(await registry.decodableRendition(of: Self.stream, for: .legacy) === rung)
        // One that announced Opus is offered the taller source.
        #expect(await registry.decodableRendition(of: Self.stream, for: opus) === source)
    }
}
