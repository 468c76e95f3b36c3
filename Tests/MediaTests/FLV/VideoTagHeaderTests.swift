import Media
import NIOCore
import Testing

struct VideoTagHeaderTests {
    typealias Header = VideoTagHeader

    @Test(arguments: [
        ("legacy AVC sequence header", "1700000000 0164", Header(frameType: .keyframe, codec: .avc, packetType: .sequenceStart, isEnhanced: false, compositionTime: 0, headerLength: 5)),
        ("legacy AVC keyframe, CT 66", "1701000042 00000001", Header(frameType: .keyframe, codec: .avc, packetType: .codedFrames, isEnhanced: false, compositionTime: 66, headerLength: 5)),
        ("legacy AVC inter frame, CT -1", "2701ffffff 00", Header(frameType: .interframe, codec: .avc, packetType: .codedFrames, isEnhanced: false, compositionTime: -1, headerLength: 5)),
        ("legacy AVC most negative CT", "2701800000", Header(frameType: .interframe, codec: .avc, packetType: .codedFrames, isEnhanced: false, compositionTime: -8_388_608, headerLength: 5)),
        ("legacy AVC end of sequence", "1702000000", Header(frameType: .keyframe, codec: .avc, packetType: .sequenceEnd, isEnhanced: false, compositionTime: 0, headerLength: 5)),
        ("codec id 12 HEVC sequence header", "1c00000000 0101", Header(frameType: .keyframe, codec: .hevc, packetType: .sequenceStart, isEnhanced: false, compositionTime: 0, headerLength: 5)),
        ("codec id 12 HEVC disposable frame", "3c01000021", Header(frameType: .disposableInterframe, codec: .hevc, packetType: .codedFrames, isEnhanced: false, compositionTime: 33, headerLength: 5)),
        ("legacy command frame", "5700", Header(frameType: .command, codec: .avc, packetType: .command, isEnhanced: false, compositionTime: 0, headerLength: 1)),
        ("enhanced hvc1 sequence start", "90 68766331 0101", Header(frameType: .keyframe, codec: .hevc, packetType: .sequenceStart, isEnhanced: true, compositionTime: 0, headerLength: 5)),
        ("enhanced hvc1 coded frames with CT", "91 68766331 000050 00", Header(frameType: .keyframe, codec: .hevc, packetType: .codedFrames, isEnhanced: true, compositionTime: 80, headerLength: 8)),
        ("enhanced hvc1 CodedFramesX", "a3 68766331 00", Header(frameType: .interframe, codec: .hevc, packetType: .codedFrames, isEnhanced: true, compositionTime: 0, headerLength: 5)),
        ("enhanced avc1 coded frames with CT", "a1 61766331 fffff0", Header(frameType: .interframe, codec: .avc, packetType: .codedFrames, isEnhanced: true, compositionTime: -16, headerLength: 8)),
        ("enhanced av01 coded frames have no CT", "a1 61763031 0a0b", Header(frameType: .interframe, codec: .av1, packetType: .codedFrames, isEnhanced: true, compositionTime: 0, headerLength: 5)),
        ("enhanced vp09 sequence end", "92 76703039", Header(frameType: .keyframe, codec: .vp9, packetType: .sequenceEnd, isEnhanced: true, compositionTime: 0, headerLength: 5)),
        ("enhanced metadata", "94 68766331 02", Header(frameType: .keyframe, codec: .hevc, packetType: .metadata, isEnhanced: true, compositionTime: 0, headerLength: 5)),
        ("enhanced metadata in a command frame", "d4 68766331 02", Header(frameType: .command, codec: .hevc, packetType: .metadata, isEnhanced: true, compositionTime: 0, headerLength: 5)),
        ("enhanced av01 MPEG-2 TS sequence start", "95 61763031", Header(frameType: .keyframe, codec: .av1, packetType: .mpeg2TSSequenceStart, isEnhanced: true, compositionTime: 0, headerLength: 5)),
        ("enhanced command frame names no codec", "d1 01", Header(frameType: .command, codec: nil, packetType: .command, isEnhanced: true, compositionTime: 0, headerLength: 1)),
    ])
    func parses(name: String, hex: String, expected: VideoTagHeader) throws {
        #expect(try VideoTagHeader(from: ByteBuffer(hex: hex)) == expected)
    }

    @Test func flagsFollowFrameAndPacketType() throws {
        let sequenceHeader = try VideoTagHeader(from: ByteBuffer(hex: Vectors.avcHigh720TagBody))
        #expect(sequenceHeader.isKeyframe && sequenceHeader.isSequenceHeader)
        let interFrame = try VideoTagHeader(from: ByteBuffer(hex: "2701000000"))
        #expect(!interFrame.isKeyframe && !interFrame.isSequenceHeader)
        let generated = try VideoTagHeader(from: ByteBuffer(hex: "4701000000"))
        #expect(generated.isKeyframe)
        let enhancedStart = try VideoTagHeader(from: ByteBuffer(hex: "90 61763031"))
        #expect(enhancedStart.isKeyframe && enhancedStart.isSequenceHeader)
    }

    @Test func parsesAtTheReaderIndexWithoutConsuming() throws {
        var buffer = ByteBuffer(hex: "ff ff 2701000010")
        buffer.moveReaderIndex(forwardBy: 2)
        let header = try VideoTagHeader(from: buffer)
        #expect(header.compositionTime == 16)
        #expect(buffer.readableBytes == 5)
    }

    @Test(arguments: [
        ("empty", "", FLVError.emptyPayload(.video)),
        ("legacy header cut after one byte", "17", .truncated(needed: 5, available: 1)),
        ("legacy header cut in the CT", "170100", .truncated(needed: 5, available: 3)),
        ("AVC packet type 3", "1703000000", .invalidVideoPacketType(3)),
        ("Sorenson H.263", "2200", .unsupportedVideoCodecID(2)),
        ("VP6", "1400", .unsupportedVideoCodecID(4)),
        ("frame type 0", "0701000000", .invalidVideoFrameType(0)),
        ("frame type 6", "6701000000", .invalidVideoFrameType(6)),
        ("enhanced frame type 0", "80 68766331", .invalidVideoFrameType(0)),
        ("enhanced frame type 7", "f0 68766331", .invalidVideoFrameType(7)),
        ("enhanced multitrack", "96 68766331", .unsupportedVideoPacketType(6)),
        ("enhanced ModEx", "97 68766331", .unsupportedVideoPacketType(7)),
        ("enhanced packet type 8", "98 68766331", .invalidVideoPacketType(8)),
        ("enhanced unknown FourCC", "90 61626364", .unsupportedVideoFourCC(0x6162_6364)),
        ("enhanced FourCC cut", "90 6876", .truncated(needed: 5, available: 3)),
        ("enhanced CT cut", "91 68766331 0000", .truncated(needed: 8, available: 7)),
    ])
    func rejectsMalformedHeaders(name: String, hex: String, error: FLVError) {
        #expect(throws: error) {
            try VideoTagHeader(from: ByteBuffer(hex: hex))
        }
    }
}
