/// An audio codec an FLV/RTMP audio tag can carry, by legacy SoundFormat or enhanced-RTMP FourCC.
public enum AudioCodec: Sendable, Hashable {
    /// SoundFormat 10 or FourCC `mp4a`.
    case aac
    /// SoundFormat 2 or 14 (8 kHz), or FourCC `.mp3`.
    case mp3
    /// FourCC `Opus`.
    case opus
    /// FourCC `fLaC`.
    case flac
    /// FourCC `ac-3`.
    case ac3
    /// FourCC `ec-3`.
    case eac3

    /// The enhanced-RTMP FourCC, big-endian.
    public var fourCC: UInt32 {
        switch self {
        case .aac: 0x6D70_3461  // "mp4a"
        case .mp3: 0x2E6D_7033  // ".mp3"
        case .opus: 0x4F70_7573  // "Opus"
        case .flac: 0x664C_6143  // "fLaC"
        case .ac3: 0x6163_2D33  // "ac-3"
        case .eac3: 0x6563_2D33  // "ec-3"
        }
    }

    /// The codec for an enhanced-RTMP FourCC, or nil if unknown.
    public init?(fourCC: UInt32) {
        switch fourCC {
        case 0x6D70_3461: self = .aac
        case 0x2E6D_7033: self = .mp3
        case 0x4F70_7573: self = .opus
        case 0x664C_6143: self = .flac
        case 0x6163_2D33: self = .ac3
        case 0x6563_2D33: self = .eac3
        default: return nil
        }
    }
}
