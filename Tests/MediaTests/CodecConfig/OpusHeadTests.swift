import Media
import NIOCore
import Testing

struct OpusHeadTests {
    static func bytes(_ hex: String) -> ByteBuffer {
        var buffer = ByteBuffer()
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            buffer.writeInteger(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return buffer
    }

    /// "OpusHead" in hex.
    static let magic = "4f70757348656164"

    @Test("libopus's stereo identification header: 2 channels, pre-skip 312, 48 kHz input, family 0")
    func libopusStereo() throws {
        // What FFmpeg's libopus encoder gives as extradata (and FFmpeg's FLV muxer sends).
        let head = try OpusHead(from: Self.bytes(Self.magic + "01" + "02" + "3801" + "80bb0000" + "0000" + "00"))
        #expect(head.channelCount == 2)
        #expect(head.preSkip == 312)
        #expect(head.inputSampleRate == 48000)
        #expect(head.mappingFamily == 0)
        #expect(head.codecString == "opus")
    }

    @Test("A 5.1 header with mapping family 1 carries its stream counts and mapping table")
    func surroundWithMappingTable() throws {
        let head = try OpusHead(from: Self.bytes(Self.magic + "01" + "06" + "3801" + "80bb0000" + "0000" + "01" + "04" + "02" + "000401020503"))
        #expect(head.channelCount == 6)
        #expect(head.mappingFamily == 1)
    }

    @Test("Malformed headers are refused", arguments: [
        ("too short", magic + "0102"),
        ("wrong magic", "4f707573546167730102380180bb0000000000"),
        ("major version 1", magic + "10" + "02" + "3801" + "80bb0000" + "0000" + "00"),
        ("no channels", magic + "01" + "00" + "3801" + "80bb0000" + "0000" + "00"),
        ("3 channels without a mapping table", magic + "01" + "03" + "3801" + "80bb0000" + "0000" + "00"),
        ("family 1 without its table", magic + "01" + "06" + "3801" + "80bb0000" + "0000" + "01" + "04"),
        ("no streams", magic + "01" + "02" + "3801" + "80bb0000" + "0000" + "01" + "00" + "00" + "0001"),
    ])
    func malformed(_ name: String, _ hex: String) {
        #expect(throws: CodecConfigError.self, "\(name)") { try OpusHead(from: Self.bytes(hex)) }
    }

    @Test("A packet's duration comes from its TOC byte and, for code 3, its frame count")
    func packetDurations() {
        // CELT 20 ms (config 31), one frame: libopus's default at 96 kbit/s.
        #expect(OpusHead.packetSamples([0xFC, 0x00]) == 960)
        // SILK 60 ms (config 3), two frames (code 1): 120 ms.
        #expect(OpusHead.packetSamples([0x19]) == 5760)
        // CELT 2.5 ms (config 16), code 3 with 4 frames: 10 ms.
        #expect(OpusHead.packetSamples([0x83, 0x04]) == 480)
        // Hybrid 10 ms (config 12), one frame.
        #expect(OpusHead.packetSamples([0x60]) == 480)
        // Code 3 with 0 frames, more than 120 ms, and empty or truncated packets say nothing.
        #expect(OpusHead.packetSamples([0xFB, 0x00]) == nil)
        #expect(OpusHead.packetSamples([0x1B, 0x03]) == nil)
        #expect(OpusHead.packetSamples([UInt8]()) == nil)
        #expect(OpusHead.packetSamples([0xFF]) == nil)
    }
}
