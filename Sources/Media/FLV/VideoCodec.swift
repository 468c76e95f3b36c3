/// A video codec an FLV/RTMP video tag can carry, by legacy CodecID or enhanced-RTMP FourCC.
public enum VideoCodec: Sendable, Hashable {
    /// H.264: CodecID 7 or FourCC `avc1`.
    case avc
    /// H.265: FourCC `hvc1`, or CodecID 12 as older Chinese SDKs send it.
    case hevc
    /// FourCC `av01`.
    case av1
    /// FourCC `vp09`.
    case vp9

    /// The enhanced-RTMP FourCC, big-endian.
    public var fourCC: UInt32 {
        switch self {
        case .avc: 0x6176_6331  // "avc1"
        case .hevc: 0x6876_6331  // "hvc1"
        case .av1: 0x6176_3031  // "av01"
        case .vp9: 0x7670_3039  // "vp09"
        }
    }

    /// The codec for an enhanced-RTMP FourCC, or nil if unknown.
    public init?(fourCC: UInt32) {
        switch fourCC {
        case 0x6176_6331: self = .avc
        case 0x6876_6331: self = .hevc
        case 0x6176_3031: self = .av1
        case 0x7670_3039: self = .vp9
        default: return nil
        }
    }
}
