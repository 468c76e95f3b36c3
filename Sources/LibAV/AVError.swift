import CFFmpeg
import Media

/// Why a libav operation failed: either a libav call returned a negative code (kept with
/// the name of the call, the text rendered only when `description` is asked for, as NIO's
/// `IOError` does with errno), or the input could not be mapped onto a libav track.
public enum AVError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A libav function returned `code` (an `AVERROR` value, negative).
    case call(operation: String, code: Int32)
    /// The video codec has no track mapping here (only H.264 and H.265 do); nil for a
    /// frame that names no codec.
    case unsupportedVideoCodec(VideoCodec?)
    /// The audio format has no track mapping here (only AAC does).
    case unsupportedAudioFormat(AudioTagHeader.SoundFormat)
    /// A track was to be built from a frame that is not a sequence header of that kind.
    case notASequenceHeader(MediaKind)
    /// The FLV audio/video tag header of a frame does not parse.
    case invalidTagHeader(FLVError)
    /// The decoder configuration record or AudioSpecificConfig does not parse.
    case invalidCodecConfiguration(CodecConfigError)
    /// The AudioSpecificConfig describes a layout this muxer cannot signal (channel
    /// configuration 0: channels defined by a program config element).
    case unsupportedChannelConfiguration(UInt8)
    /// A coded frame arrived for a track the muxer was not configured with.
    case trackNotConfigured(MediaKind)
    /// A sequence header with a configuration different from the track's arrived: the
    /// output must start again with a new muxer (and a discontinuity).
    case configurationChanged(MediaKind)
    /// A coded frame's codec differs from its track's codec.
    case codecMismatch(MediaKind)
    /// A muxer was asked for no tracks at all.
    case noTracks
    /// The operation is not valid in the muxer's current state or for its container
    /// (for example `write` after `finish`, or `flushFragment` on MPEG-TS).
    case invalidState(operation: String)
    /// Coded video whose length-prefixed (AVCC/HVCC) NAL unit framing does not tile the
    /// payload, or Annex B output without a start code: `offset` is where it went wrong.
    case malformedNALUnits(offset: Int)
    /// A picture size or pixel format a decoder, scaler or encoder cannot work with.
    case invalidPicture(width: Int, height: Int)
    /// The encoder's global header holds no SPS or no PPS.
    case missingParameterSets

    /// The libav error code: the call's code, or `AVERROR(EINVAL)` for input errors found
    /// on the Swift side.
    public var code: Int32 {
        if case .call(_, let code) = self {
            return code
        }
        return cffmpeg_averror_einval()
    }

    public var description: String {
        switch self {
        case .call(let operation, let code):
            return "\(operation) failed: \(Self.message(for: code)) (\(code))"
        case .unsupportedVideoCodec(let codec):
            return "unsupported video codec \(codec.map { "\($0)" } ?? "(none)")"
        case .unsupportedAudioFormat(let format):
            return "unsupported audio sound format \(format.rawValue)"
        case .notASequenceHeader(let kind):
            return "\(kind) frame is not a sequence header"
        case .invalidTagHeader(let error):
            return "invalid FLV tag header: \(error)"
        case .invalidCodecConfiguration(let error):
            return "invalid codec configuration: \(error)"
        case .unsupportedChannelConfiguration(let configuration):
            return "unsupported AAC channel configuration \(configuration)"
        case .trackNotConfigured(let kind):
            return "no \(kind) track configured"
        case .configurationChanged(let kind):
            return "\(kind) configuration changed mid-stream"
        case .codecMismatch(let kind):
            return "\(kind) frame codec differs from the track's"
        case .noTracks:
            return "a muxer needs at least one track"
        case .invalidState(let operation):
            return "\(operation) is not valid in the muxer's state"
        case .malformedNALUnits(let offset):
            return "malformed NAL unit framing at byte \(offset)"
        case .invalidPicture(let width, let height):
            return "unsupported picture \(width)x\(height)"
        case .missingParameterSets:
            return "the encoder emitted no SPS/PPS"
        }
    }

    /// `av_strerror`'s text for `code`.
    static func message(for code: Int32) -> String {
        // AV_ERROR_MAX_STRING_SIZE (64) is a plain integer macro, imported as Int32.
        let size = Int(AV_ERROR_MAX_STRING_SIZE)
        return String(unsafeUninitializedCapacity: size) { bytes in
            bytes.initialize(repeating: 0)
            bytes.withMemoryRebound(to: CChar.self) { characters in
                if let base = characters.baseAddress {
                    _ = cffmpeg_av_err2str(code, base, size)
                }
            }
            // The text is NUL-terminated inside the buffer.
            return bytes.firstIndex(of: 0) ?? size
        }
    }
}

extension AVError {
    /// Throws `.call(operation:code:)` when `code` is negative; returns it otherwise.
    @discardableResult
    static func check(_ code: Int32, _ operation: @autoclosure () -> String) throws(AVError) -> Int32 {
        guard code >= 0 else {
            throw .call(operation: operation(), code: code)
        }
        return code
    }
}

extension AVError {
    /// What `parse` reads from a configuration record (avcC, hvcC, av1C, AudioSpecificConfig),
    /// its error as `.invalidCodecConfiguration`.
    static func parsingConfiguration<Record>(_ parse: () throws(CodecConfigError) -> Record) throws(AVError) -> Record {
        do {
            return try parse()
        } catch {
            throw .invalidCodecConfiguration(error)
        }
    }
}
