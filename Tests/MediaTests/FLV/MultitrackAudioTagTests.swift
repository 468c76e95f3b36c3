import NIOCore
import Testing

@testable import Media

/// `MultitrackAudioTag`: the tags PyAV's FFmpeg 8 writes for a file's second audio stream
/// (the first goes out as ordinary AAC tags), split into single-track tags.
struct MultitrackAudioTagTests {
    @Test func ffmpegsSecondAACStreamBecomesLegacyAACTags() throws {
        // `95 00 'mp4a' 01 <AudioSpecificConfig>`: track 1's sequence start (AAC-LC 48 kHz mono).
        let start = ByteBuffer(bytes: [0x95, 0x00] + Array("mp4a".utf8) + [0x01, 0x11, 0x88, 0x56, 0xE5, 0x00])
        #expect(MultitrackAudioTag.isMultitrack(start))
        let tag = try MultitrackAudioTag(start)
        #expect(tag.tracks.count == 1 && tag.tracks[0].trackID == 1)
        #expect(Array(tag.tracks[0].payload.readableBytesView) == [0xAF, 0x00, 0x11, 0x88, 0x56, 0xE5, 0x00])
        let frame = try MediaFrame.classified(kind: .audio, timestamp: 0, payload: tag.tracks[0].payload)
        #expect(frame.isSequenceHeader)
        #expect(try frame.validatedConfigurationRecord() == "audio: mp4a.40.2 48000 Hz 1 ch")
        // CodedFrames: `AF 01` + the raw frame.
        let coded = try MultitrackAudioTag(ByteBuffer(bytes: [0x95, 0x01] + Array("mp4a".utf8) + [0x01, 0xDE, 0x02]))
        #expect(Array(coded.tracks[0].payload.readableBytesView) == [0xAF, 0x01, 0xDE, 0x02])
        // MultichannelConfig stays enhanced: `94 'mp4a' …`.
        let channels = try MultitrackAudioTag(ByteBuffer(bytes: [0x95, 0x04] + Array("mp4a".utf8) + [0x01, 0x01, 0x01, 0x00, 0x00, 0x00]))
        #expect(Array(channels.tracks[0].payload.readableBytesView) == [0x94] + Array("mp4a".utf8) + [0x01, 0x01, 0x00, 0x00, 0x00])
        // A legacy AAC tag and a single-track enhanced one are not multitrack.
        #expect(!MultitrackAudioTag.isMultitrack(ByteBuffer(bytes: [0xAF, 0x01])))
        #expect(!MultitrackAudioTag.isMultitrack(ByteBuffer(bytes: [0x91] + Array("Opus".utf8))))
    }

    /// ManyTracksManyCodecs: a FourCC, an id and a UI24 size per track; Opus stays enhanced.
    @Test func manyTracksManyCodecs() throws {
        let payload = ByteBuffer(bytes: [0x95, 0x21]
            + Array("mp4a".utf8) + [0x00, 0x00, 0x00, 0x02, 0x21, 0x10]
            + Array("Opus".utf8) + [0x03, 0x00, 0x00, 0x01, 0xFC])
        let tag = try MultitrackAudioTag(payload)
        #expect(tag.tracks.map(\.trackID) == [0, 3])
        #expect(Array(tag.tracks[0].payload.readableBytesView) == [0xAF, 0x01, 0x21, 0x10])
        #expect(Array(tag.tracks[1].payload.readableBytesView) == [0x91] + Array("Opus".utf8) + [0xFC])
    }

    static let mp4a: [UInt8] = Array("mp4a".utf8)
    static let malformedCases: [(String, [UInt8])] = [
        ("truncated", [0x95]),
        ("unknown FourCC", [0x95, 0x01, 0x78, 0x78, 0x78, 0x78, 0x01, 0x00]),
        ("nested multitrack", [0x95, 0x05] + mp4a + [0x01, 0x00]),
        ("multitrack type 3", [0x95, 0x31] + mp4a + [0x01, 0x00]),
        ("size past the end", [0x95, 0x11] + mp4a + [0x01, 0x00, 0x00, 0x09, 0x00]),
    ]

    @Test("Malformed multitrack audio is refused", arguments: malformedCases)
    func malformed(_ name: String, _ bytes: [UInt8]) {
        #expect(throws: FLVError.self, "\(name)") { try MultitrackAudioTag(ByteBuffer(bytes: bytes)) }
    }
}
