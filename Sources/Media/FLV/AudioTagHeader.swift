import NIOCore

/// The header at the start of an FLV/RTMP audio tag body, legacy (FLV spec v10.1 E.4.2.1)
/// or enhanced RTMP (SoundFormat 9 = ExHeader, veovera enhanced-rtmp v2).
///
/// Legacy: `SoundFormat:4 SoundRate:2 SoundSize:1 SoundType:1`, then for AAC an
/// `AACPacketType:8`. Enhanced: `9:4 AudioPacketType:4 FourCC:32`. `headerLength` is where
/// the codec data starts.
public struct AudioTagHeader: Sendable, Equatable {
    /// The FLV SoundFormat. An open set: values without a name are still representable,
    /// and an integer literal compares directly (`soundFormat == 10`).
    public struct SoundFormat: RawRepresentable, Hashable, Sendable, ExpressibleByIntegerLiteral {
        public var rawValue: UInt8

        public init(rawValue: UInt8) {
            self.rawValue = rawValue
        }

        public init(integerLiteral value: UInt8) {
            self.rawValue = value
        }

        public static let linearPCMPlatformEndian: SoundFormat = 0
        public static let adpcm: SoundFormat = 1
        public static let mp3: SoundFormat = 2
        public static let linearPCMLittleEndian: SoundFormat = 3
        public static let nellymoser16kHzMono: SoundFormat = 4
        public static let nellymoser8kHzMono: SoundFormat = 5
        public static let nellymoser: SoundFormat = 6
        public static let g711ALaw: SoundFormat = 7
        public static let g711MuLaw: SoundFormat = 8
        /// Enhanced RTMP: a FourCC names the codec.
        public static let exHeader: SoundFormat = 9
        public static let aac: SoundFormat = 10
        public static let speex: SoundFormat = 11
        public static let mp3At8kHz: SoundFormat = 14
        public static let deviceSpecific: SoundFormat = 15
    }

    /// The legacy AAC packet type.
    public enum AACPacketType: UInt8, Sendable {
        /// The body is an AudioSpecificConfig.
        case sequenceHeader = 0
        /// The body is one raw AAC frame.
        case raw = 1
    }

    /// The enhanced-RTMP AudioPacketType.
    public enum PacketType: UInt8, Sendable {
        /// The body is the codec configuration (AudioSpecificConfig, OpusHead, FLAC streaminfo...).
        case sequenceStart = 0
        case codedFrames = 1
        case sequenceEnd = 2
        case multichannelConfig = 4
    }

    public var soundFormat: SoundFormat
    /// Legacy SoundRate: 0 = 5.5 kHz, 1 = 11 kHz, 2 = 22 kHz, 3 = 44 kHz (AAC always says 3;
    /// the AudioSpecificConfig holds the real rate). 0 for enhanced headers.
    public var soundRate: UInt8
    /// Legacy SoundSize: 0 = 8-bit, 1 = 16-bit samples. 0 for enhanced headers.
    public var soundSize: UInt8
    /// Legacy SoundType: 0 = mono, 1 = stereo. 0 for enhanced headers.
    public var soundType: UInt8
    /// Present for legacy AAC only.
    public var aacPacketType: AACPacketType?
    /// Present for enhanced headers only.
    public var packetType: PacketType?
    /// AAC, MP3 or an enhanced-RTMP codec; nil for the other legacy formats.
    public var codec: AudioCodec?
    /// Offset of the codec data from the start of the tag body: 1, 2 or 5 bytes.
    public var headerLength: Int {
        get { Int(storedHeaderLength) }
        set { storedHeaderLength = UInt8(clamping: newValue) }
    }
    /// One byte: see `VideoTagHeader`'s.
    private var storedHeaderLength: UInt8

    /// True when the body is the codec configuration.
    public var isSequenceHeader: Bool {
        aacPacketType == .sequenceHeader || packetType == .sequenceStart
    }

    /// The legacy AAC header (`0xAF`, then the packet type) an encoder writes: SoundRate 3,
    /// 16-bit, stereo, as the FLV spec requires for AAC whatever the real configuration.
    public static func legacyAAC(_ packetType: AACPacketType) -> AudioTagHeader {
        AudioTagHeader(soundFormat: .aac, soundRate: 3, soundSize: 1, soundType: 1, aacPacketType: packetType, packetType: nil, codec: .aac, headerLength: 2)
    }

    /// A single-track Enhanced RTMP header (`[ExHeader | packetType]`, then the FourCC).
    public static func enhanced(_ codec: AudioCodec, _ packetType: PacketType) -> AudioTagHeader {
        AudioTagHeader(soundFormat: .exHeader, soundRate: 0, soundSize: 0, soundType: 0, aacPacketType: nil, packetType: packetType, codec: codec, headerLength: 5)
    }

    private init(
        soundFormat: SoundFormat,
        soundRate: UInt8,
        soundSize: UInt8,
        soundType: UInt8,
        aacPacketType: AACPacketType?,
        packetType: PacketType?,
        codec: AudioCodec?,
        headerLength: Int
    ) {
        self.soundFormat = soundFormat
        self.soundRate = soundRate
        self.soundSize = soundSize
        self.soundType = soundType
        self.aacPacketType = aacPacketType
        self.packetType = packetType
        self.codec = codec
        self.storedHeaderLength = UInt8(clamping: headerLength)
    }

    /// Parses the header at the reader index of `payload` (not consumed).
    public init(from payload: ByteBuffer) throws(FLVError) {
        var buffer = payload
        guard let first = buffer.readInteger(as: UInt8.self) else {
            throw .emptyPayload(.audio)
        }
        soundFormat = SoundFormat(rawValue: first >> 4)
        aacPacketType = nil
        packetType = nil

        if soundFormat == .exHeader {
            (soundRate, soundSize, soundType) = (0, 0, 0)
            let packetTypeBits = first & 0x0F
            switch packetTypeBits {
            case 5, 7:  // Multitrack, ModEx
                throw .unsupportedAudioPacketType(packetTypeBits)
            default:
                guard let type = PacketType(rawValue: packetTypeBits) else {
                    throw .invalidAudioPacketType(packetTypeBits)
                }
                packetType = type
            }
            guard let fourCC = buffer.readInteger(as: UInt32.self) else {
                throw .truncated(needed: 5, available: payload.readableBytes)
            }
            guard let codec = AudioCodec(fourCC: fourCC) else {
                throw .unsupportedAudioFourCC(fourCC)
            }
            self.codec = codec
            storedHeaderLength = 5
            return
        }

        soundRate = (first >> 2) & 0x03
        soundSize = (first >> 1) & 0x01
        soundType = first & 0x01
        switch soundFormat {
        case .aac:
            codec = .aac
            guard let typeByte = buffer.readInteger(as: UInt8.self) else {
                throw .truncated(needed: 2, available: payload.readableBytes)
            }
            guard let type = AACPacketType(rawValue: typeByte) else {
                throw .invalidAACPacketType(typeByte)
            }
            aacPacketType = type
            storedHeaderLength = 2
        case .mp3, .mp3At8kHz:
            codec = .mp3
            storedHeaderLength = 1
        default:
            codec = nil
            storedHeaderLength = 1
        }
    }
}
