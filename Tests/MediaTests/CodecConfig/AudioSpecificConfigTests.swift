import Media
import NIOCore
import Testing

struct AudioSpecificConfigTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var config: String
        var audioObjectType: Int
        var sampleRate: Int
        var channelCount: Int
        var sbrPresent: Bool
        var psPresent: Bool
        var codecString: String
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "textbook AAC-LC 44.1 kHz stereo", config: "1210",
             audioObjectType: 2, sampleRate: 44100, channelCount: 2, sbrPresent: false, psPresent: false, codecString: "mp4a.40.2"),
        // ffmpeg's native encoder (see Vectors) appends the 0x2B7 sync extension with sbrPresentFlag 0.
        Case(name: "ffmpeg AAC-LC 44.1 kHz stereo", config: String(Vectors.aacLC44100StereoTagBody.dropFirst(4)),
             audioObjectType: 2, sampleRate: 44100, channelCount: 2, sbrPresent: false, psPresent: false, codecString: "mp4a.40.2"),
        Case(name: "ffmpeg AAC-LC 48 kHz mono", config: String(Vectors.aacLC48000MonoTagBody.dropFirst(4)),
             audioObjectType: 2, sampleRate: 48000, channelCount: 1, sbrPresent: false, psPresent: false, codecString: "mp4a.40.2"),
        // Hand-made from ISO 14496-3 1.6.2.1 (no HE-AAC encoder in this ffmpeg build):
        // AOT 5, core 22050 (index 7), stereo, SBR 44100 (index 4), core AOT 2, GASpecificConfig 000.
        Case(name: "explicit HE-AAC 44.1 kHz stereo", config: "2b920800",
             audioObjectType: 5, sampleRate: 44100, channelCount: 2, sbrPresent: true, psPresent: false, codecString: "mp4a.40.5"),
        // AOT 29, core 24000 (index 6), mono core, SBR 48000 (index 3), core AOT 2: parametric stereo.
        Case(name: "explicit HE-AAC v2 48 kHz", config: "eb098800",
             audioObjectType: 29, sampleRate: 48000, channelCount: 2, sbrPresent: true, psPresent: true, codecString: "mp4a.40.29"),
        // AOT 2, 24000, mono, GASpecificConfig, then 0x2B7 + AOT 5 + sbrPresentFlag 1 + index 3
        // (48000), then 0x548 + psPresentFlag 1.
        Case(name: "backward-compatible HE-AAC v2", config: "130856e59d4880",
             audioObjectType: 2, sampleRate: 48000, channelCount: 2, sbrPresent: true, psPresent: true, codecString: "mp4a.40.2"),
        // AOT escape 31 + 6 bits (10 -> 42, USAC), explicit 24-bit frequency 44100, stereo.
        Case(name: "escaped object type and explicit frequency", config: "f95e01588840",
             audioObjectType: 42, sampleRate: 44100, channelCount: 2, sbrPresent: false, psPresent: false, codecString: "mp4a.40.42"),
        // AOT 2, index 3, channel configuration 7 (7.1): 00010 0011 0111 000
        Case(name: "AAC-LC 7.1", config: "11b8",
             audioObjectType: 2, sampleRate: 48000, channelCount: 8, sbrPresent: false, psPresent: false, codecString: "mp4a.40.2"),
    ]

    @Test(arguments: cases)
    func parsesConfigs(_ testCase: Case) throws {
        let config = try AudioSpecificConfig(from: ByteBuffer(hex: testCase.config))
        #expect(config.audioObjectType == testCase.audioObjectType)
        #expect(config.sampleRate == testCase.sampleRate)
        #expect(config.channelCount == testCase.channelCount)
        #expect(config.sbrPresent == testCase.sbrPresent)
        #expect(config.psPresent == testCase.psPresent)
        #expect(config.codecString == testCase.codecString)
    }

    @Test func exposesCoreAndExtensionFrequencies() throws {
        let config = try AudioSpecificConfig(from: ByteBuffer(hex: "2b920800"))
        #expect(config.samplingFrequencyIndex == 7)
        #expect(config.samplingFrequency == 22050)
        #expect(config.extensionSamplingFrequency == 44100)
        #expect(config.coreAudioObjectType == 2)
        #expect(config.channelConfiguration == 2)

        let explicit = try AudioSpecificConfig(from: ByteBuffer(hex: "f95e01588840"))
        #expect(explicit.samplingFrequencyIndex == nil)
        #expect(explicit.samplingFrequency == 44100)
    }

    @Test(arguments: [
        ("empty", "", CodecConfigError.bitstreamExhausted(bitOffset: 0, requested: 5)),
        ("one byte", "12", .bitstreamExhausted(bitOffset: 5, requested: 4)),
        ("reserved frequency index 13", "16 80", .reservedSamplingFrequencyIndex(13)),
        ("reserved channel configuration 8", "1240", .reservedChannelConfiguration(8)),
        ("explicit frequency 0", "1780000000", .valueOutOfRange(field: "samplingFrequency", value: 0)),
        ("explicit HE-AAC cut before the core type", "2b92", .bitstreamExhausted(bitOffset: 13, requested: 4)),
        ("escape cut short", "f8", .bitstreamExhausted(bitOffset: 5, requested: 6)),
    ])
    func rejectsMalformedConfigs(name: String, hex: String, error: CodecConfigError) {
        #expect(throws: error) {
            try AudioSpecificConfig(from: ByteBuffer(hex: hex))
        }
    }

    @Test func truncatedSyncExtensionIsIgnored() throws {
        // 12 10 then half of the sync extension: still AAC-LC.
        let config = try AudioSpecificConfig(from: ByteBuffer(hex: "121056"))
        #expect(config.sampleRate == 44100)
        #expect(!config.sbrPresent)
    }
}
