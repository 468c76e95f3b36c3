import Media
import NIOCore
import Testing

struct AudioTagHeaderTests {
    @Test func parsesAACSequenceHeader() throws {
        let header = try AudioTagHeader(from: ByteBuffer(hex: Vectors.aacLC44100StereoTagBody))
        #expect(header.soundFormat == .aac)
        #expect(header.soundFormat == 10)
        #expect(header.soundRate == 3)
        #expect(header.soundSize == 1)
        #expect(header.soundType == 1)
        #expect(header.aacPacketType == .sequenceHeader)
        #expect(header.packetType == nil)
        #expect(header.codec == .aac)
        #expect(header.headerLength == 2)
        #expect(header.isSequenceHeader)
    }

    @Test(arguments: [
        // (name, body, format, codec, aac packet type, enhanced packet type, header length, sequence header)
        ("AAC raw", "af01 2100", AudioTagHeader.SoundFormat.aac, AudioCodec?.some(.aac), AudioTagHeader.AACPacketType?.some(.raw), AudioTagHeader.PacketType?.none, 2, false),
        ("AAC mono sequence header", "ae00 1188", .aac, .aac, .sequenceHeader, nil, 2, true),
        ("MP3 44 kHz 16-bit stereo", "2f fffb", .mp3, .mp3, nil, nil, 1, false),
        ("MP3 8 kHz", "e2 fffb", .mp3At8kHz, .mp3, nil, nil, 1, false),
        ("G.711 A-law", "72 d5", .g711ALaw, nil, nil, nil, 1, false),
        ("Speex", "b2 00", .speex, nil, nil, nil, 1, false),
        ("enhanced Opus sequence start", "90 4f707573 4f707573", .exHeader, .opus, nil, .sequenceStart, 5, true),
        ("enhanced mp4a coded frames", "91 6d703461 21", .exHeader, .aac, nil, .codedFrames, 5, false),
        ("enhanced FLAC sequence end", "92 664c6143", .exHeader, .flac, nil, .sequenceEnd, 5, false),
        ("enhanced AC-3 multichannel config", "94 61632d33 00", .exHeader, .ac3, nil, .multichannelConfig, 5, false),
        ("enhanced E-AC-3", "91 65632d33", .exHeader, .eac3, nil, .codedFrames, 5, false),
        ("enhanced MP3", "91 2e6d7033", .exHeader, .mp3, nil, .codedFrames, 5, false),
    ])
    func parses(
        name: String, hex: String, format: AudioTagHeader.SoundFormat, codec: AudioCodec?,
        aacPacketType: AudioTagHeader.AACPacketType?, packetType: AudioTagHeader.PacketType?,
        headerLength: Int, isSequenceHeader: Bool
    ) throws {
        let header = try AudioTagHeader(from: ByteBuffer(hex: hex))
        #expect(header.soundFormat == format)
        #expect(header.codec == codec)
        #expect(header.aacPacketType == aacPacketType)
        #expect(header.packetType == packetType)
        #expect(header.headerLength == headerLength)
        #expect(header.isSequenceHeader == isSequenceHeader)
    }

    @Test(arguments: [
        ("empty", "", FLVError.emptyPayload(.audio)),
        ("AAC without packet type", "af", .truncated(needed: 2, available: 1)),
        ("AAC packet type 2", "af02", .invalidAACPacketType(2)),
        ("enhanced multitrack", "95 4f707573", .unsupportedAudioPacketType(5)),
        ("enhanced ModEx", "97 4f707573", .unsupportedAudioPacketType(7)),
        ("enhanced packet type 3", "93 4f707573", .invalidAudioPacketType(3)),
        ("enhanced packet type 15", "9f 4f707573", .invalidAudioPacketType(15)),
        ("enhanced unknown FourCC", "90 61626364", .unsupportedAudioFourCC(0x6162_6364)),
        ("enhanced FourCC cut", "90 4f70", .truncated(needed: 5, available: 3)),
    ])
    func rejectsMalformedHeaders(name: String, hex: String, error: FLVError) {
        #expect(throws: error) {
            try AudioTagHeader(from: ByteBuffer(hex: hex))
        }
    }
}
