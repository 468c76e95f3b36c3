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
