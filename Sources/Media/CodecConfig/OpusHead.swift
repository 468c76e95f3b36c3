import NIOCore

/// An Opus identification header, `OpusHead` (RFC 7845 5.1): the body of an Enhanced RTMP
/// `Opus` SequenceStart, the extradata FFmpeg gives Opus, and what MP4's `dOps` box is
/// written from.
///
/// Layout, little-endian: "OpusHead", version (major 0), channel count, pre-skip (samples at
/// 48 kHz), the encoder's input sample rate (informational only: Opus always decodes at
/// 48 kHz here), output gain (Q7.8 dB), the channel mapping family and, for a family other
/// than 0, the stream count, the coupled stream count and one mapping byte per channel.
public struct OpusHead: Sendable, Equatable {
    /// Every Opus stream's clock: packet durations and pre-skip count 48 kHz samples.
    public static let clockRate = 48000
    /// The fixed part's length (through the mapping family).
    public static let minimumLength = 19

    /// Output channels, 1...255.
    public var channelCount: Int
    /// Samples at 48 kHz the decoder discards at the start.
    public var preSkip: Int
    /// The sample rate the encoder was fed (0 when unknown).
    public var inputSampleRate: Int
    /// 0: mono or stereo, no mapping table; 1: Vorbis order, up to 8 channels; 255 and others: undefined order.
    public var mappingFamily: UInt8

    /// The RFC 6381 codec string for Opus in MP4 and HLS.
    public var codecString: String { "opus" }

    /// Parses the readable bytes of `buffer` (not consumed).
    public init(from buffer: ByteBuffer) throws(CodecConfigError) {
        let available = buffer.readableBytes
        guard available >= Self.minimumLength else {
            throw .truncated(needed: Self.minimumLength, available: available)
        }
        let bytes = buffer.readableBytesView
        let start = bytes.startIndex
        func byte(_ offset: Int) -> UInt8 { bytes[start + offset] }
        func littleEndian(_ offset: Int, _ count: Int) -> Int {
            (0..<count).reduce(0) { value, index in value | Int(byte(offset + index)) << (8 * index) }
        }
        guard bytes.prefix(8).elementsEqual("OpusHead".utf8) else {
            throw .valueOutOfRange(field: "OpusHead magic", value: Int(byte(0)))
        }
        // RFC 7845: a major version (upper four bits) other than 0 is incompatible.
        guard byte(8) >> 4 == 0 else {
            throw .unsupportedConfigurationVersion(byte(8))
        }
        channelCount = Int(byte(9))
        guard channelCount > 0 else {
            throw .valueOutOfRange(field: "channel count", value: 0)
        }
        preSkip = littleEndian(10, 2)
        inputSampleRate = littleEndian(12, 4)
        mappingFamily = byte(18)
        if mappingFamily == 0 {
            guard channelCount <= 2 else {
                throw .valueOutOfRange(field: "channel count for mapping family 0", value: channelCount)
            }
        } else {
            let needed = Self.minimumLength + 2 + channelCount
            guard available >= needed else {
                throw .truncated(needed: needed, available: available)
            }
            let streams = Int(byte(19))
            let coupled = Int(byte(20))
            guard streams > 0, coupled <= streams, streams + coupled <= 255 else {
                throw .valueOutOfRange(field: "stream count", value: streams)
            }
        }
    }

    /// The samples at 48 kHz one Opus packet decodes to, from its TOC byte and, for code 3,
    /// its frame count (RFC 6716 3.1, 3.2.5), or nil for a packet that is empty, malformed or
    /// longer than the 120 ms the RFC allows.
    public static func packetSamples<Bytes: Collection<UInt8>>(_ packet: Bytes) -> Int? {
        guard let toc = packet.first else { return nil }
        let configuration = Int(toc >> 3)
        let frameSamples: Int
        switch configuration {
        case 0...11:
            // SILK: 10, 20, 40, 60 ms.
            frameSamples = [480, 960, 1920, 2880][configuration & 3]
        case 12...15:
            // Hybrid: 10, 20 ms.
            frameSamples = [480, 960][configuration & 1]
        default:
            // CELT: 2.5, 5, 10, 20 ms.
            frameSamples = [120, 240, 480, 960][configuration & 3]
        }
        let frames: Int
        switch toc & 3 {
        case 0: frames = 1
        case 1, 2: frames = 2
        default:
            guard packet.count >= 2 else { return nil }
            frames = Int(packet[packet.index(after: packet.startIndex)] & 0x3F)
        }
        let samples = frameSamples * frames
        guard samples > 0, samples <= 5760 else { return nil }
        return samples
    }
}
