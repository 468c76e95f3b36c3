import NIOCore
import Testing

@testable import Media

/// `MultitrackVideoTag`: an Enhanced RTMP v2 multitrack tag split into single-track tags
/// players read. The sequence start was cut from FLV that PyAV's FFmpeg 8 wrote for a file
/// with two H.264 video streams (the second is track 1, in OneTrack tags).
struct MultitrackVideoTagTests {
    /// `96 00 'avc1' 01 <avcC>`: track 1's sequence start (320x180 H.264 High).
    static let oneTrackSequenceStart = "960061766331010164000dffe1001a6764000dacd941419f9f0110000003001000000303c0f142996001000668ebe3cb22c0fdf8f800"

    @Test func ffmpegsOneTrackSequenceStartBecomesALegacyAVCSequenceHeader() throws {
        let payload = ByteBuffer(hex: Self.oneTrackSequenceStart)
        #expect(MultitrackVideoTag.isMultitrack(payload))
        let tag = try MultitrackVideoTag(payload)
        #expect(tag.tracks.count == 1 && tag.tracks[0].trackID == 1)
        let frame = try MediaFrame.classified(kind: .video, timestamp: 0, payload: tag.tracks[0].payload)
        #expect(frame.isSequenceHeader && frame.isKeyframe)
        let header = try frame.videoTagHeader()
        #expect(header.codec == .avc && !header.isEnhanced)
        let record = try AVCDecoderConfigurationRecord(from: try #require(frame.codecData(from: header.headerLength)))
        #expect(record.sequenceParameterSet.width == 320 && record.sequenceParameterSet.height == 180)
        // A legacy tag is not multitrack.
        #expect(!MultitrackVideoTag.isMultitrack(ByteBuffer(bytes: [0x17, 0x00])))
    }

    /// CodedFrames keeps its composition time; CodedFramesX (no CTS) gets 0.
    @Test func codedFramesKeepTheirCompositionTime() throws {
        let coded = try MultitrackVideoTag(ByteBuffer(bytes: [0xA6, 0x01] + Array("avc1".utf8) + [0x02, 0x00, 0x00, 0x43, 0x00, 0x00, 0x00, 0x01, 0x41]))
        #expect(coded.tracks.first?.trackID == 2)
        #expect(Array(coded.tracks[0].payload.readableBytesView) == [0x27, 0x01, 0x00, 0x00, 0x43, 0x00, 0x00, 0x00, 0x01, 0x41])
        let codedX = try MultitrackVideoTag(ByteBuffer(bytes: [0xA6, 0x03] + Array("avc1".utf8) + [0x01, 0x00, 0x00, 0x00, 0x01, 0x41]))
        #expect(Array(codedX.tracks[0].payload.readableBytesView) == [0x27, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x41])
        // HEVC stays enhanced: `[FrameType | CodedFrames] 'hvc1' CTS data`.
        let hevc = try MultitrackVideoTag(ByteBuffer(bytes: [0x96, 0x01] + Array("hvc1".utf8) + [0x01, 0x00, 0x00, 0x10, 0xAA]))
        #expect(Array(hevc.tracks[0].payload.readableBytesView) == [0x91] + Array("hvc1".utf8) + [0x00, 0x00, 0x10, 0xAA])
    }

    /// ManyTracks: a UI24 size per track; ManyTracksManyCodecs: a FourCC per track too.
    @Test func manyTracksAreSplit() throws {
        let many = try MultitrackVideoTag(ByteBuffer(bytes: [0x96, 0x13] + Array("av01".utf8) + [0x00, 0x00, 0x00, 0x02, 0xA1, 0xA2, 0x01, 0x00, 0x00, 0x01, 0xB1]))
        #expect(many.tracks.map(\.trackID) == [0, 1])
        #expect(Array(many.tracks[1].payload.readableBytesView) == [0x93] + Array("av01".utf8) + [0xB1])
        let codecs = try MultitrackVideoTag(ByteBuffer(bytes: [0x96, 0x23] + Array("avc1".utf8) + [0x00, 0x00, 0x00, 0x01, 0xC1] + Array("hvc1".utf8) + [0x01, 0x00, 0x00, 0x01, 0xD1]))
        #expect(codecs.tracks.count == 2)
        #expect(try codecs.tracks.map { try VideoTagHeader(from: $0.payload).codec } == [.avc, .hevc])
    }

    /// Hostile tags throw; none traps or allocates past its own size.
    @Test func malformedTagsThrow() {
        let cases: [[UInt8]] = [
            [0x96],  // no multitrack byte
            [0x96, 0x01, 0x61],  // FourCC cut short
            [0x96, 0x01] + Array("xxxx".utf8) + [0x01, 0x00],  // unknown FourCC
            [0x96, 0x04] + Array("avc1".utf8) + [0x01],  // inner metadata
            [0x96, 0x06] + Array("avc1".utf8) + [0x01],  // nested multitrack
            [0x96, 0x31] + Array("avc1".utf8) + [0x01],  // reserved multitrack type
            [0x96, 0x11] + Array("avc1".utf8) + [0x01, 0xFF, 0xFF, 0xFF, 0x00],  // size past the end
            [0x96, 0x01] + Array("avc1".utf8) + [0x01, 0x00],  // CTS cut short
            [0xD6, 0x01] + Array("avc1".utf8) + [0x01, 0x00, 0x00, 0x00],  // command frame type
        ]
        for bytes in cases {
            #expect(throws: FLVError.self, "\(bytes)") { try MultitrackVideoTag(ByteBuffer(bytes: bytes)) }
        }
        // More tracks than the bound.
        let flood = [0x96, 0x13] + Array("avc1".utf8) + Array((0..<40).map { [UInt8($0), 0x00, 0x00, 0x00] }.joined())
        #expect(throws: FLVError.self) { try MultitrackVideoTag(ByteBuffer(bytes: flood)) }
    }
}
