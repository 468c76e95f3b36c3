import AMF0
import NIOCore
import Testing

@testable import RTMP

/// `TrackIdInfoMaps`: a multitrack stream's open tracks in its `onMetaData` (Enhanced RTMP
/// v2's `videoTrackIdInfoMap` / `audioTrackIdInfoMap`), and the renditions a node that pulls
/// the stream reads from them, bounded against a peer that fills them.
@Suite struct TrackIdInfoMapsTests {
    static let publisher: AMF0Value = .ecmaArray([AMF0Property("width", .number(640)), AMF0Property("height", .number(360))])

    static func body(_ metadata: AMF0Value?) -> ByteBuffer {
        DataMessage(name: DataMessage.onMetaData, values: [metadata ?? .null]).metadataBody() ?? ByteBuffer()
    }

    @Test func withoutTracksThePublishersMetadataIsUnchanged() {
        #expect(TrackIdInfoMaps.metadata(Self.publisher, videoTracks: [], audioTracks: []) == Self.publisher)
        #expect(TrackIdInfoMaps.metadata(nil, videoTracks: [], audioTracks: []) == nil)
    }

    @Test func theOpenTracksAreListedAfterThePublishersPropertiesAndReadBack() throws {
        let announced = try #require(TrackIdInfoMaps.metadata(Self.publisher, videoTracks: [2, 1], audioTracks: [1]))
        #expect(announced["width"] == .number(640))
        #expect(announced[TrackIdInfoMaps.videoKey]?.properties?.map(\.name) == ["1", "2"])
        #expect(announced[TrackIdInfoMaps.audioKey]?.properties?.map(\.name) == ["1"])
        #expect(TrackIdInfoMaps.renditions(inMetadataBody: Self.body(announced)) == ["track1", "track2", "audio1"])
        // A publisher without metadata of its own: the maps alone.
        let alone = try #require(TrackIdInfoMaps.metadata(nil, videoTracks: [3], audioTracks: []))
        #expect(TrackIdInfoMaps.renditions(inMetadataBody: Self.body(alone)) == ["track3"])
    }

    @Test func aPublishersMetadataAtTheValueLimitStillCarriesTheMaps() throws {
        let limit = RTMPServerConfiguration().maxMetadataValues
        let full: AMF0Value = .ecmaArray((0..<(limit - 2)).map { AMF0Property("k\($0)", .number(Double($0))) })
        let announced = try #require(TrackIdInfoMaps.metadata(full, videoTracks: Array(1...7), audioTracks: Array(1...7)))
        #expect(TrackIdInfoMaps.renditions(inMetadataBody: Self.body(announced)).count == 14)
    }

    /// The most the maps can add, with every id three digits long: what `mostEncodedBytes`
    /// lets past a publisher's byte limit.
    @Test func theMapsAtTheirLargestFitTheirOwnBound() throws {
        let ids = (0..<TrackIdInfoMaps.mostTracks).map { UInt8(255 - $0) }
        let bare = Self.body(.ecmaArray([])).readableBytes
        let full = Self.body(TrackIdInfoMaps.metadata(.ecmaArray([]), videoTracks: ids, audioTracks: ids)).readableBytes
        #expect(full - bare == TrackIdInfoMaps.mostEncodedBytes)
    }

    /// An origin that raised `maxMetadataValues` sends metadata with more values than a node's
    /// default allows: the node that pulls it still reads its tracks.
    @Test func metadataPastTheDefaultValueLimitStillNamesItsTracks() throws {
        let values = 3 * RTMPServerConfiguration().maxMetadataValues
        let large: AMF0Value = .ecmaArray((0..<values).map { AMF0Property("k\($0)", .boolean(true)) })
        let announced = try #require(TrackIdInfoMaps.metadata(large, videoTracks: [1, 2], audioTracks: [1]))
        let body = Self.body(announced)
        #expect(body.readableBytes <= RTMPServerConfiguration().maxMetadataBytes)
        #expect(TrackIdInfoMaps.renditions(inMetadataBody: body) == ["track1", "track2", "audio1"])
    }

    @Test func aPublishersOwnMapsAreReplacedByWhatTheNodeServes() throws {
        let claimed: AMF0Value = .object([
            AMF0Property("duration", .number(0)),
            AMF0Property(TrackIdInfoMaps.videoKey, .object([AMF0Property("5", .object([])), AMF0Property("6", .object([]))])),
        ])
        // Without a track open, a publisher's own maps are dropped: a pulling node would open
        // renditions that do not exist.
        let none = try #require(TrackIdInfoMaps.metadata(claimed, videoTracks: [], audioTracks: []))
        #expect(TrackIdInfoMaps.renditions(inMetadataBody: Self.body(none)) == [])
        #expect(none["duration"] == .number(0))
        let announced = try #require(TrackIdInfoMaps.metadata(claimed, videoTracks: [1], audioTracks: []))
        #expect(announced[TrackIdInfoMaps.videoKey]?.properties?.map(\.name) == ["1"])
        #expect(announced.properties?.filter { $0.name == TrackIdInfoMaps.videoKey }.count == 1)
        guard case .object = announced else {
            Issue.record("an object's metadata became \(announced)")
            return
        }
    }

    @Test func whatAPeerWritesInTheMapsIsReadWithinBounds() {
        // Track 0 (the stream itself), names that are not ids, ids past 255, repeats.
        var video = ["0", "x", "-1", "256", "1.5", "1", "1", "2"].map { AMF0Property($0, .object([])) }
        video += (10...60).map { AMF0Property(String($0), .number(1)) }
        let metadata: AMF0Value = .ecmaArray([
            AMF0Property(TrackIdInfoMaps.videoKey, .ecmaArray(video)),
            AMF0Property(TrackIdInfoMaps.audioKey, .string("not a map")),
        ])
        let renditions = TrackIdInfoMaps.renditions(inMetadataBody: Self.body(metadata))
        #expect(renditions.count == TrackIdInfoMaps.mostTracks)
        #expect(renditions.prefix(3) == ["track1", "track2", "track10"])
        #expect(Set(renditions).count == renditions.count)
        // Not metadata, or not AMF0 at all: nothing.
        #expect(TrackIdInfoMaps.renditions(inMetadataBody: ByteBuffer(bytes: [0x02, 0x00, 0x03, 0x61, 0x62])) == [])
        #expect(TrackIdInfoMaps.renditions(inMetadataBody: ByteBuffer(bytes: [0xFF, 0x00])) == [])
        var other = ByteBuffer()
        DataMessage(name: "onCuePoint", values: [metadata]).encode(into: &other)
        #expect(TrackIdInfoMaps.renditions(inMetadataBody: other) == [])
    }
}
