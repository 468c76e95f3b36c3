/// The video codecs a viewer says it can decode, as an Enhanced RTMP client announces them
/// on `connect` (`fourCcList`, `videoFourCcInfoMap`).
///
/// H.264 is legacy FLV and every RTMP player decodes it, so it is always in. A client that
/// announces nothing is a legacy one: it is sent HEVC, AV1 or VP9 only if it said so, since
/// bytes it cannot decode are worse than a clear refusal (`NetStream.Play.Failed`).
public struct VideoCodecSupport: Sendable, Hashable, CustomStringConvertible {
    /// The enhanced codecs announced (H.264 is implied).
    public private(set) var codecs: Set<VideoCodec>
    /// `*` was announced: the client takes any codec.
    public private(set) var acceptsAny: Bool

    /// A client that announced no enhanced codec: H.264 only.
    public static let legacy = VideoCodecSupport(codecs: [], acceptsAny: false)
    /// Any codec (`*`), or a protocol that does not negotiate.
    public static let any = VideoCodecSupport(codecs: [], acceptsAny: true)

    public init(codecs: Set<VideoCodec>, acceptsAny: Bool = false) {
        self.codecs = codecs
        self.acceptsAny = acceptsAny
    }

    /// Reads announced FourCC strings (`"hvc1"`, `"av01"`, `"*"`); unknown ones are ignored,
    /// and so is everything past the first `maxEntries`.
    public init<Names: Sequence<String>>(fourCCs names: Names) {
        var codecs = Set<VideoCodec>()
        var acceptsAny = false
        for name in names.prefix(Self.maxEntries) {
            if name == "*" {
                acceptsAny = true
            } else if let codec = VideoCodec(fourCCString: name) {
                codecs.insert(codec)
            }
        }
        self.init(codecs: codecs, acceptsAny: acceptsAny)
    }

    /// More entries than any real client sends (the spec lists a handful of codecs).
    public static let maxEntries = 64

    /// Whether a viewer with this support can be sent `codec`.
    public func decodes(_ codec: VideoCodec) -> Bool {
        codec == .avc || acceptsAny || codecs.contains(codec)
    }

    public var description: String {
        if acceptsAny { return "*" }
        return (["avc1"] + codecs.filter { $0 != .avc }.map(\.fourCCString).sorted()).joined(separator: ",")
    }
}

extension VideoCodec {
    /// The FourCC as text, `"hvc1"`.
    public var fourCCString: String {
        let value = fourCC
        return String(decoding: [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)], as: UTF8.self)
    }

    /// The codec a FourCC string names (`"hvc1"`, `"av01"`); nil for anything else.
    public init?(fourCCString text: String) {
        guard text.utf8.count == 4 else { return nil }
        let bytes = Array(text.utf8)
        self.init(fourCC: bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
    }
}
