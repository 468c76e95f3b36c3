/// A codec an Enhanced RTMP client can announce on `connect` by its FourCC.
public protocol AnnouncedCodec: Hashable, Sendable {
    /// The enhanced-RTMP FourCC, big-endian.
    var fourCC: UInt32 { get }
    /// The codec for an enhanced-RTMP FourCC, or nil if unknown.
    init?(fourCC: UInt32)
    /// What every client decodes whether it announced it or not: what legacy FLV carries.
    static var legacy: Set<Self> { get }
}

extension VideoCodec: AnnouncedCodec {
    /// H.264 is legacy FLV (CodecID 7): every RTMP player decodes it.
    public static let legacy: Set<VideoCodec> = [.avc]
}

extension AudioCodec: AnnouncedCodec {
    /// AAC and MP3 are legacy FLV (SoundFormat 10 and 2): every RTMP player decodes them.
    /// Opus, FLAC, AC-3 and E-AC-3 come only as enhanced FourCC tags.
    public static let legacy: Set<AudioCodec> = [.aac, .mp3]
}

extension AnnouncedCodec {
    /// The FourCC as text, `"hvc1"`.
    public var fourCCString: String {
        let value = fourCC
        return String(decoding: [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)], as: UTF8.self)
    }

    /// The codec a FourCC string names (`"hvc1"`, `"Opus"`); nil for anything else.
    public init?(fourCCString text: String) {
        guard text.utf8.count == 4 else { return nil }
        self.init(fourCC: text.utf8.reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
    }
}

/// The codecs of one kind a viewer says it can decode, as an Enhanced RTMP client announces
/// them on `connect` (`fourCcList`, `videoFourCcInfoMap`, `audioFourCcInfoMap`).
///
/// What legacy FLV carries (H.264; AAC and MP3) is always in. A client that announces
/// nothing is a legacy one: it is sent HEVC, AV1, VP9 or Opus only if it said so, since
/// bytes it cannot decode are worse than a clear refusal (`NetStream.Play.Failed`).
public struct CodecSupport<Codec: AnnouncedCodec>: Sendable, Hashable, CustomStringConvertible {
    /// The enhanced codecs announced (the legacy ones are implied).
    public private(set) var codecs: Set<Codec>
    /// `*` was announced: the client takes any codec.
    public private(set) var acceptsAny: Bool

    /// A client that announced no enhanced codec: the legacy ones only.
    public static var legacy: Self { Self(codecs: [], acceptsAny: false) }
    /// Any codec (`*`), or a protocol that does not negotiate.
    public static var any: Self { Self(codecs: [], acceptsAny: true) }

    public init(codecs: Set<Codec>, acceptsAny: Bool = false) {
        self.codecs = codecs
        self.acceptsAny = acceptsAny
    }

    /// Reads announced FourCC strings (`"hvc1"`, `"Opus"`, `"*"`); those of another kind or
    /// unknown are ignored, and so is everything past the first `maxAnnouncedCodecs`.
    public init<Names: Sequence<String>>(fourCCs names: Names) {
        var codecs = Set<Codec>()
        var acceptsAny = false
        for name in names.prefix(maxAnnouncedCodecs) {
            if name == "*" {
                acceptsAny = true
            } else if let codec = Codec(fourCCString: name) {
                codecs.insert(codec)
            }
        }
        self.init(codecs: codecs, acceptsAny: acceptsAny)
    }

    /// Whether a viewer with this support can be sent `codec`.
    public func decodes(_ codec: Codec) -> Bool {
        Codec.legacy.contains(codec) || acceptsAny || codecs.contains(codec)
    }

    /// The same support with `other`'s added.
    public func union(_ other: Self) -> Self {
        Self(codecs: codecs.union(other.codecs), acceptsAny: acceptsAny || other.acceptsAny)
    }

    public var description: String {
        if acceptsAny { return "*" }
        return (Codec.legacy.map(\.fourCCString).sorted() + codecs.subtracting(Codec.legacy).map(\.fourCCString).sorted()).joined(separator: ",")
    }
}

/// More announced codecs than any real client sends (the spec lists a handful).
public let maxAnnouncedCodecs = 64

public typealias VideoCodecSupport = CodecSupport<VideoCodec>
public typealias AudioCodecSupport = CodecSupport<AudioCodec>

/// What a viewer's protocol says it decodes, video and audio (RTMP's `connect`).
public struct ClientCodecs: Sendable, Hashable, CustomStringConvertible {
    public var video: VideoCodecSupport
    public var audio: AudioCodecSupport

    /// A client that announced no enhanced codec.
    public static let legacy = ClientCodecs(video: .legacy, audio: .legacy)

    public init(video: VideoCodecSupport, audio: AudioCodecSupport) {
        self.video = video
        self.audio = audio
    }

    /// Whether a rendition of these codecs can be sent; an unknown one (no sequence header
    /// yet, or a legacy audio format without one) is sent as it is.
    public func decodes(video videoCodec: VideoCodec?, audio audioCodec: AudioCodec?) -> Bool {
        (videoCodec.map(video.decodes) ?? true) && (audioCodec.map(audio.decodes) ?? true)
    }

    public var description: String { "video \(video), audio \(audio)" }
}
