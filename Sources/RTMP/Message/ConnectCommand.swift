import AMF0
import Media

/// The parameters of a `connect` command (RTMP specification 7.2.1.1).
public struct ConnectCommand: Sendable, Equatable {
    /// The transaction id (1 from every known client); echo it in the `_result`.
    public var transactionID: Double
    /// The application name, e.g. `live`. Kept raw: it may carry a query string (`live?token=x`).
    public var app: String
    /// The server URL the client used, e.g. `rtmp://host/live`; missing from some SDKs.
    public var tcUrl: String?
    /// The client's Flash version string, e.g. `FMLE/3.0 (compatible; FMSc/1.0)` (OBS, ffmpeg).
    public var flashVer: String?
    /// The SWF URL, if sent.
    public var swfUrl: String?
    /// The page URL, if sent.
    public var pageUrl: String?
    /// 0 for AMF0, 3 for AMF3; echo it in the `_result` (0 when absent).
    public var objectEncoding: Double
    /// Enhanced RTMP v2 capability flags (`capsEx`), 0 when absent: `reconnectCapability`
    /// and others the server does not act on (multitrack, ModEx, nanosecond offsets).
    public var capsEx: UInt32
    /// The codecs the client announced it decodes (Enhanced RTMP's `fourCcList`, which
    /// clients fill with video and audio FourCCs alike, `videoFourCcInfoMap` and
    /// `audioFourCcInfoMap`); `.legacy` (H.264, AAC, MP3) when it announced none.
    public var codecs: ClientCodecs
    /// The whole command object as received.
    public var commandObject: AMF0Value
    /// Values after the command object (some clients send user arguments here).
    public var optionalArguments: [AMF0Value]

    /// Creates the parameters.
    public init(
        transactionID: Double,
        app: String,
        tcUrl: String? = nil,
        flashVer: String? = nil,
        swfUrl: String? = nil,
        pageUrl: String? = nil,
        objectEncoding: Double = 0,
        capsEx: UInt32 = 0,
        codecs: ClientCodecs = .legacy,
        commandObject: AMF0Value = .object([]),
        optionalArguments: [AMF0Value] = []
    ) {
        self.transactionID = transactionID
        self.app = app
        self.tcUrl = tcUrl
        self.flashVer = flashVer
        self.swfUrl = swfUrl
        self.pageUrl = pageUrl
        self.objectEncoding = objectEncoding
        self.capsEx = capsEx
        self.codecs = codecs
        self.commandObject = commandObject
        self.optionalArguments = optionalArguments
    }

    /// Reads the parameters from a `connect` command. A missing `app` reads as "".
    public init(_ command: CommandMessage) {
        let object = command.commandObject
        self.init(
            transactionID: command.transactionID,
            app: object["app"]?.stringValue ?? "",
            tcUrl: object["tcUrl"]?.stringValue,
            flashVer: object["flashVer"]?.stringValue,
            swfUrl: object["swfUrl"]?.stringValue,
            pageUrl: object["pageUrl"]?.stringValue,
            objectEncoding: object["objectEncoding"]?.numberValue ?? 0,
            capsEx: Self.flags(object["capsEx"]?.numberValue),
            codecs: ClientCodecs(
                video: Self.announced(fourCcList: object["fourCcList"], infoMap: object["videoFourCcInfoMap"]),
                audio: Self.announced(fourCcList: object["fourCcList"], infoMap: object["audioFourCcInfoMap"])
            ),
            commandObject: object,
            optionalArguments: command.arguments
        )
    }

    /// `videoFourCcInfoMap` flags: the client can decode the codec (0x01), or forward it as it
    /// is (0x04, a relay or recorder).
    static let canDecode: UInt32 = 0x01
    static let canForward: UInt32 = 0x04

    /// The codecs of one kind in `fourCcList` (an array of FourCC strings, `*` for any) and
    /// in the keys of an info map (`videoFourCcInfoMap`, `audioFourCcInfoMap`) whose flags
    /// say decode or forward. Anything else is ignored.
    static func announced<Codec>(fourCcList: AMF0Value?, infoMap: AMF0Value?) -> CodecSupport<Codec> {
        let listed = (fourCcList?.arrayValue ?? fourCcList?.properties?.map(\.value))?.prefix(maxAnnouncedCodecs).compactMap(\.stringValue)
        let mapped = infoMap?.properties?.prefix(maxAnnouncedCodecs)
            .filter { flags($0.value.numberValue) & (canDecode | canForward) != 0 }
            .map(\.name)
        guard listed?.isEmpty == false || mapped?.isEmpty == false else { return .legacy }
        // Read apart, so that junk in one cannot crowd out the other.
        return CodecSupport(fourCCs: listed ?? []).union(CodecSupport(fourCCs: mapped ?? []))
    }

    /// `capsEx` bit: the client handles `NetConnection.Connect.ReconnectRequest`.
    public static let reconnectCapability: UInt32 = 0x01

    /// Whether the client advertised `capability` in `capsEx`.
    public func advertises(_ capability: UInt32) -> Bool {
        capsEx & capability != 0
    }

    /// A flags number as sent (an AMF0 double); anything that is not a whole number in
    /// 0...UInt32.max (NaN, negative, fractional) reads as no flags.
    static func flags(_ number: Double?) -> UInt32 {
        guard let number, number >= 0, number <= Double(UInt32.max), number == number.rounded(.towardZero) else { return 0 }
        return UInt32(number)
    }
}
