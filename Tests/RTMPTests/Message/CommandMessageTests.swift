@testable import AMF0
import Media
import NIOCore
import Testing

@testable import RTMP

struct CommandMessageTests {
    static let createStreamBytes = Wire.amfString("createStream") + Wire.amfNumber(2) + [0x05]

    @Test
    func decodesHandWrittenCreateStream() throws {
        let raw = RTMPMessage(typeID: 20, streamID: 0, timestamp: 0, chunkStreamID: 3, payload: ByteBuffer(Self.createStreamBytes))
        let command = try CommandMessage(from: raw)
        #expect(command == CommandMessage(name: "createStream", transactionID: 2, commandObject: .null))
        #expect(try RTMPCommand(command) == .createStream(transactionID: 2))
        #expect(command.message().payload.bytes == Self.createStreamBytes)
    }

    @Test
    func decodesAMF3CommandWithFormatByte() throws {
        let raw = RTMPMessage(typeID: 17, streamID: 0, timestamp: 0, chunkStreamID: 3, payload: ByteBuffer([0x00] + Self.createStreamBytes))
        #expect(try CommandMessage(from: raw).name == "createStream")
    }

    @Test
    func rejectsWrongTypeAndMissingName() {
        let audio = RTMPMessage(typeID: 8, streamID: 1, timestamp: 0, chunkStreamID: 4, payload: ByteBuffer([0xAF]))
        #expect(throws: MessageError.unexpectedType(8)) { try CommandMessage(from: audio) }
        #expect(throws: MessageError.missingName) { try CommandMessage(from: ByteBuffer(Wire.amfNumber(1))) }
        #expect(throws: MessageError.missingTransactionID(command: "x")) {
            try CommandMessage(from: ByteBuffer(Wire.amfString("x") + Wire.amfString("y")))
        }
        #expect(throws: MessageError.amf0(.truncated)) { try CommandMessage(from: ByteBuffer(Wire.amfString("x") + [0x00, 0x01])) }
    }

    @Test
    func decodesConnectLikeOBS() throws {
        let command = CommandMessage(
            name: "connect",
            transactionID: 1,
            commandObject: .object([
                AMF0Property("app", .string("live?token=abc")),
                AMF0Property("type", .string("nonprivate")),
                AMF0Property("flashVer", .string("FMLE/3.0 (compatible; FMSc/1.0)")),
                AMF0Property("swfUrl", .string("rtmp://localhost/live")),
                AMF0Property("tcUrl", .string("rtmp://localhost/live")),
            ])
        )
        let decoded = try CommandMessage(from: command.message())
        guard case .connect(let connect) = try RTMPCommand(decoded) else {
            Issue.record("expected connect")
            return
        }
        #expect(connect.app == "live?token=abc")
        #expect(connect.tcUrl == "rtmp://localhost/live")
        #expect(connect.flashVer == "FMLE/3.0 (compatible; FMSc/1.0)")
        #expect(connect.objectEncoding == 0)
        #expect(connect.transactionID == 1)
    }

    static let commandRows: [(CommandMessage, RTMPCommand)] = [
        (CommandMessage(name: "releaseStream", transactionID: 2, arguments: [.string("demo?key=abc")]),
         .releaseStream(transactionID: 2, streamName: "demo?key=abc")),
        (CommandMessage(name: "FCPublish", transactionID: 3, arguments: [.string("demo")]), .fcPublish(transactionID: 3, streamName: "demo")),
        (CommandMessage(name: "FCUnpublish", transactionID: 6, arguments: []), .fcUnpublish(transactionID: 6, streamName: "")),
        (CommandMessage(name: "publish", transactionID: 5, arguments: [.string("demo?key=abc"), .string("live")]),
         .publish(transactionID: 5, streamName: "demo?key=abc", publishType: "live")),
        (CommandMessage(name: "publish", transactionID: 5, arguments: [.string("demo")]),
         .publish(transactionID: 5, streamName: "demo", publishType: "live")),
        (CommandMessage(name: "play", transactionID: 4, arguments: [.string("demo"), .number(-2000)]),
         .play(transactionID: 4, streamName: "demo", start: -2000, duration: -1, reset: false)),
        (CommandMessage(name: "play", transactionID: 4, arguments: [.string("demo"), .number(0), .number(10), .boolean(true)]),
         .play(transactionID: 4, streamName: "demo", start: 0, duration: 10, reset: true)),
        (CommandMessage(name: "deleteStream", transactionID: 7, arguments: [.number(1)]), .deleteStream(transactionID: 7, streamID: 1)),
        (CommandMessage(name: "closeStream", transactionID: 0), .closeStream(transactionID: 0)),
        (CommandMessage(name: "getStreamLength", transactionID: 3, arguments: [.string("demo")]),
         .getStreamLength(transactionID: 3, streamName: "demo")),
        (CommandMessage(name: "pause", transactionID: 0, arguments: [.boolean(true), .number(1500)]),
         .pause(transactionID: 0, isPaused: true, milliseconds: 1500)),
        (CommandMessage(name: "receiveVideo", transactionID: 0, arguments: [.boolean(false)]), .receiveVideo(false)),
        (CommandMessage(name: "receiveAudio", transactionID: 0, arguments: [.boolean(true)]), .receiveAudio(true)),
        (CommandMessage(name: "_result", transactionID: 4, arguments: [.number(1)]), .result(transactionID: 4, values: [.null, .number(1)])),
        (CommandMessage(name: "_error", transactionID: 4, arguments: [.string("x")]), .error(transactionID: 4, values: [.null, .string("x")])),
        (CommandMessage.onStatus(code: .publishStart, description: "demo"),
         .onStatus(transactionID: 0, info: .object([
             AMF0Property("level", .string("status")), AMF0Property("code", .string("NetStream.Publish.Start")),
             AMF0Property("description", .string("demo")),
         ]))),
        (CommandMessage(name: "_checkbw", transactionID: 5), .unknown("_checkbw")),
    ]

    @Test(arguments: CommandMessageTests.commandRows)
    func decodesCommand(_ command: CommandMessage, _ expected: RTMPCommand) throws {
        let wire = try CommandMessage(from: command.message())
        #expect(wire == command)
        #expect(try RTMPCommand(wire) == expected)
    }

    @Test
    func rejectsPublishAndPlayWithoutName() {
        #expect(throws: MessageError.invalidArgument(command: "publish", position: 0)) {
            try RTMPCommand(CommandMessage(name: "publish", transactionID: 5))
        }
        #expect(throws: MessageError.invalidArgument(command: "play", position: 0)) {
            try RTMPCommand(CommandMessage(name: "play", transactionID: 5, arguments: [.null]))
        }
    }

    @Test
    func connectResultMatchesNginxShape() throws {
        let result = CommandMessage.connectResult(transactionID: 1, objectEncoding: 3)
        let decoded = try CommandMessage(from: result.message())
        #expect(decoded.name == "_result" && decoded.transactionID == 1)
        #expect(decoded.commandObject["fmsVer"]?.stringValue == "FMS/3,0,1,123")
        #expect(decoded.commandObject["capabilities"]?.numberValue == 31)
        let info = try #require(decoded.arguments.first)
        #expect(info["level"]?.stringValue == "status")
        #expect(info["code"]?.stringValue == "NetConnection.Connect.Success")
        #expect(info["objectEncoding"]?.numberValue == 3)
    }

    @Test
    func responseBuildersProduceExpectedBodies() throws {
        let createStream = CommandMessage.createStreamResult(transactionID: 4, streamID: 1)
        #expect(createStream.message().payload.bytes == Wire.amfString("_result") + Wire.amfNumber(4) + [0x05] + Wire.amfNumber(1))

        let status = CommandMessage.onStatus(level: .error, code: .playStreamNotFound, description: "no", details: "demo")
        #expect(status.arguments.first?["details"]?.stringValue == "demo")
        #expect(status.message(chunkStreamID: 5, streamID: 1).streamID == 1)

        let fc = CommandMessage.onFCPublish(streamName: "demo")
        #expect(fc.name == "onFCPublish" && fc.arguments.first?["code"]?.stringValue == "NetStream.Publish.Start")
        #expect(CommandMessage.connectError(description: "bad app").arguments.first?["level"]?.stringValue == "error")
    }

    /// Enhanced RTMP v2: `capsEx` in `connect` is read as flags; anything but a whole number
    /// in UInt32's range reads as none, so a hostile value cannot trap or claim a capability.
    @Test(arguments: [
        (Optional(1.0), UInt32(1), true), (Optional(3.0), UInt32(3), true), (Optional(2.0), UInt32(2), false),
        (nil, UInt32(0), false), (Optional(-1.0), UInt32(0), false), (Optional(1.5), UInt32(0), false),
        (Optional(Double.nan), UInt32(0), false), (Optional(Double.infinity), UInt32(0), false), (Optional(1e12), UInt32(0), false),
    ])
    func connectReadsCapsEx(value: Double?, flags: UInt32, reconnect: Bool) throws {
        var properties = [AMF0Property("app", .string("live"))]
        if let value { properties.append(AMF0Property("capsEx", .number(value))) }
        let connect = ConnectCommand(CommandMessage(name: "connect", transactionID: 1, commandObject: .object(properties)))
        #expect(connect.capsEx == flags)
        #expect(connect.advertises(ConnectCommand.reconnectCapability) == reconnect)
    }

    /// Enhanced RTMP codec negotiation: `fourCcList` (FFmpeg's `rtmp_enhanced_codecs`) and
    /// `videoFourCcInfoMap` (OBS) say which video codecs a player decodes; H.264 always, and
    /// nothing else when the client announced neither. Junk entries are ignored, not trusted.
    @Test
    func connectReadsAnnouncedVideoCodecs() throws {
        func codecs(_ extra: [AMF0Property]) -> VideoCodecSupport {
            ConnectCommand(CommandMessage(name: "connect", transactionID: 1, commandObject: .object([AMF0Property("app", .string("live"))] + extra))).codecs.video
        }
        let legacy = codecs([])
        #expect(legacy == .legacy && legacy.decodes(.avc) && !legacy.decodes(.hevc) && !legacy.decodes(.av1))
        let listed = codecs([AMF0Property("fourCcList", .strictArray([.string("hvc1"), .string("av01"), .number(7), .string("toolong"), .string("mp4a")]))])
        #expect(listed.decodes(.hevc) && listed.decodes(.av1) && !listed.decodes(.vp9) && listed.decodes(.avc))
        #expect(listed.description == "avc1,av01,hvc1")
        #expect(codecs([AMF0Property("fourCcList", .strictArray([.string("*")]))]).decodes(.vp9))
        // OBS's map: decode (1) or forward (4) counts; encode only (2) does not.
        let mapped = codecs([AMF0Property("videoFourCcInfoMap", .object([
            AMF0Property("hvc1", .number(1)), AMF0Property("av01", .number(2)), AMF0Property("vp09", .number(4)), AMF0Property("*", .number(.nan)),
        ]))])
        #expect(mapped.decodes(.hevc) && !mapped.decodes(.av1) && mapped.decodes(.vp9) && !mapped.acceptsAny)
        // A hostile list: past the first 64 entries nothing is read.
        let flood = codecs([AMF0Property("fourCcList", .strictArray(Array(repeating: .string("xxxx"), count: 1000) + [.string("hvc1")]))])
        #expect(!flood.decodes(.hevc))
        // Junk in the list does not crowd out the map.
        let both = codecs([
            AMF0Property("fourCcList", .strictArray(Array(repeating: .string("xxxx"), count: 1000))),
            AMF0Property("videoFourCcInfoMap", .object([AMF0Property("hvc1", .number(1))])),
        ])
        #expect(both.decodes(.hevc))
        #expect(codecs([AMF0Property("fourCcList", .string("hvc1"))]) == .legacy)
    }

    /// Audio codecs come from the same `fourCcList` (FFmpeg puts `Opus` beside `hvc1`) and
    /// from `audioFourCcInfoMap`; AAC and MP3 are always in, Opus only when announced.
    @Test
    func connectReadsAnnouncedAudioCodecs() throws {
        func codecs(_ extra: [AMF0Property]) -> ClientCodecs {
            ConnectCommand(CommandMessage(name: "connect", transactionID: 1, commandObject: .object([AMF0Property("app", .string("live"))] + extra))).codecs
        }
        let legacy = codecs([]).audio
        #expect(legacy == .legacy && legacy.decodes(.aac) && legacy.decodes(.mp3) && !legacy.decodes(.opus))
        // A player that announced enhanced video only decodes no enhanced audio.
        let videoOnly = codecs([AMF0Property("fourCcList", .strictArray([.string("hvc1"), .string("av01")]))])
        #expect(videoOnly.video.decodes(.hevc) && !videoOnly.audio.decodes(.opus))
        #expect(!videoOnly.decodes(video: .avc, audio: .opus) && videoOnly.decodes(video: .hevc, audio: .aac) && videoOnly.decodes(video: nil, audio: nil))
        let mixed = codecs([AMF0Property("fourCcList", .strictArray([.string("hvc1"), .string("Opus"), .string("fLaC")]))])
        #expect(mixed.audio.decodes(.opus) && mixed.audio.decodes(.flac) && !mixed.audio.decodes(.ac3) && !mixed.video.decodes(.av1))
        #expect(mixed.audio.description == ".mp3,mp4a,Opus,fLaC")
        // OBS's map: decode (1) or forward (4) counts; encode only (2) does not.
        let mapped = codecs([AMF0Property("audioFourCcInfoMap", .object([AMF0Property("Opus", .number(1)), AMF0Property("ac-3", .number(2)), AMF0Property("ec-3", .number(4))]))])
        #expect(mapped.audio.decodes(.opus) && !mapped.audio.decodes(.ac3) && mapped.audio.decodes(.eac3) && mapped.video == .legacy)
        #expect(codecs([AMF0Property("audioFourCcInfoMap", .object([AMF0Property("*", .number(1))]))]).audio.decodes(.ac3))
    }

    @Test
    func connectResultEchoesCapsExOnlyToEnhancedClients() throws {
        let plain = try CommandMessage(from: CommandMessage.connectResult(transactionID: 1).message())
        #expect(plain.commandObject["capsEx"] == nil)
        let enhanced = try CommandMessage(from: CommandMessage.connectResult(transactionID: 1, capsEx: 1).message())
        #expect(enhanced.commandObject["capsEx"]?.numberValue == 1)
    }

    /// The reconnect request as the spec shapes it: a NetConnection onStatus with
    /// transaction 0 and a null command object; `tcUrl` only when given.
    @Test
    func reconnectRequestShape() throws {
        let moved = try CommandMessage(from: CommandMessage.reconnectRequest(tcUrl: "rtmp://b:1935/live", description: "bye").message(chunkStreamID: 3))
        #expect(moved.name == "onStatus" && moved.transactionID == 0 && moved.commandObject == .null)
        let info = try #require(moved.arguments.first)
        #expect(info["code"]?.stringValue == "NetConnection.Connect.ReconnectRequest")
        #expect(info["level"]?.stringValue == "status")
        #expect(info["tcUrl"]?.stringValue == "rtmp://b:1935/live")
        #expect(info["description"]?.stringValue == "bye")
        let same = try CommandMessage(from: CommandMessage.reconnectRequest(tcUrl: nil, description: "bye").message(chunkStreamID: 3))
        #expect(same.arguments.first?["tcUrl"] == nil)
    }
}
