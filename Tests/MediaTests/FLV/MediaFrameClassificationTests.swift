import Media
import NIOCore
import Testing

struct MediaFrameClassificationTests {
    @Test(arguments: [
        ("AVC sequence header", MediaKind.video, Vectors.avcHigh720TagBody, true, true),
        ("AVC keyframe", .video, "1701000000 00000002 6588", true, false),
        ("AVC inter frame", .video, "2701000000 00000002 4188", false, false),
        ("enhanced HEVC sequence start", .video, "90 68766331" + Vectors.hevcMain720Record, true, true),
        ("enhanced HEVC inter frame", .video, "a3 68766331 00000002 0201", false, false),
        ("AAC sequence header", .audio, Vectors.aacLC44100StereoTagBody, false, true),
        ("AAC raw frame", .audio, "af01 2100", false, false),
        ("MP3 frame", .audio, "2f fffb", false, false),
        ("script data", .script, "02000a6f6e4d657461446174610800000000", false, false),
    ])
    func classifiesFromTheTagHeader(name: String, kind: MediaKind, hex: String, isKeyframe: Bool, isSequenceHeader: Bool) throws {
        let payload = ByteBuffer(hex: hex)
        let frame = try MediaFrame.classified(kind: kind, timestamp: 1234, payload: payload)
        #expect(frame.kind == kind)
        #expect(frame.timestamp == 1234)
        #expect(frame.isKeyframe == isKeyframe)
        #expect(frame.isSequenceHeader == isSequenceHeader)
        #expect(frame.payload == payload)
        // The header is parsed here, once, and travels with the frame.
        switch kind {
        case .video: #expect(frame.tagHeader == .video(try VideoTagHeader(from: payload)))
        case .audio: #expect(frame.tagHeader == .audio(try AudioTagHeader(from: payload)))
        case .script: #expect(frame.tagHeader == nil)
        }
    }

    /// What downstream reads instead of parsing: PTS from the composition time, and the
    /// codec data after the header, sharing the payload's bytes.
    @Test func carriesPresentationTimeAndCodecData() throws {
        // An AVC inter frame with composition time 0x000102 = 258 ms, then one 2-byte NAL unit.
        let video = try MediaFrame.classified(kind: .video, timestamp: 1000, payload: ByteBuffer(hex: "2701000102 00000002 4188"))
        #expect(video.compositionTime == 258)
        #expect(video.presentationTimestamp == 1258)
        let header = try video.videoTagHeader()
        #expect(header.codec == .avc && header.packetType == .codedFrames)
        #expect(video.codecData(from: header.headerLength) == ByteBuffer(hex: "00000002 4188"))
        #expect(video.codecData(from: 99) == nil)
        // Negative composition time (SI24) is sign-extended.
        let negative = try MediaFrame.classified(kind: .video, timestamp: 1000, payload: ByteBuffer(hex: "2701fffff6 00000002 4188"))
        #expect(negative.presentationTimestamp == 990)
        let audio = try MediaFrame.classified(kind: .audio, timestamp: 1000, payload: ByteBuffer(hex: "af01 2100"))
        #expect(audio.compositionTime == 0 && audio.presentationTimestamp == 1000)
        #expect(audio.codecData(from: try audio.audioTagHeader().headerLength) == ByteBuffer(hex: "2100"))
    }

    /// The header the AAC encoder declares for `0xAF 0x00` / `0xAF 0x01` is what parsing
    /// those bytes gives.
    @Test func legacyAACHeaderMatchesItsBytes() throws {
        #expect(AudioTagHeader.legacyAAC(.sequenceHeader) == (try AudioTagHeader(from: ByteBuffer(hex: "af00 1210"))))
        #expect(AudioTagHeader.legacyAAC(.raw) == (try AudioTagHeader(from: ByteBuffer(hex: "af01 2100"))))
    }

    /// Every viewer's queue holds a copy of each frame: carrying the header must not make
    /// the frame bigger than it was without one (48 bytes on 64-bit platforms).
    @Test func frameStaysAsSmallAsBeforeItCarriedItsHeader() {
        #expect(MemoryLayout<MediaFrame>.size <= 48)
        #expect(MemoryLayout<VideoTagHeader>.size <= 9 && MemoryLayout<AudioTagHeader>.size <= 8)
    }

    /// A frame built from flags alone has no header yet; it is parsed on demand.
    @Test func parsesOnDemandForFramesBuiltFromFlags() throws {
        let frame = MediaFrame(kind: .video, timestamp: 40, isKeyframe: true, payload: ByteBuffer(hex: "1701000028 00000002 6588"))
        #expect(frame.tagHeader == nil)
        #expect(frame.presentationTimestamp == 80)
        #expect(try frame.videoTagHeader().isKeyframe)
        let broken = MediaFrame(kind: .video, timestamp: 0, payload: ByteBuffer(hex: "2701"))
        #expect(throws: FLVError.truncated(needed: 5, available: 2)) {
            try broken.videoTagHeader()
        }
        #expect(broken.compositionTime == 0)
    }

    @Test(arguments: [MediaKind.audio, .video, .script])
    func rejectsEmptyPayloads(kind: MediaKind) {
        #expect(throws: FLVError.emptyPayload(kind)) {
            try MediaFrame.classified(kind: kind, timestamp: 0, payload: ByteBuffer())
        }
    }

    @Test func propagatesHeaderErrors() {
        #expect(throws: FLVError.unsupportedVideoCodecID(2)) {
            try MediaFrame.classified(kind: .video, timestamp: 0, payload: ByteBuffer(hex: "2200"))
        }
        #expect(throws: FLVError.invalidAACPacketType(9)) {
            try MediaFrame.classified(kind: .audio, timestamp: 0, payload: ByteBuffer(hex: "af09"))
        }
    }
}
