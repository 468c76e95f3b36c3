import AMF0
import Media
import NIOCore
import Session
import Synchronization
import Testing

@testable import RTMP

/// The command sequences real clients send, and hostile ones, through the server connection
/// on an `EmbeddedChannel`: what the client is answered, whether a session starts and ends,
/// and whether the connection stays open. The sequences follow what each client sends on
/// the wire (ffmpeg's `libavformat/rtmpproto.c`, OBS's librtmp fork, rtmpdump's librtmp,
/// GStreamer's `rtmp2`).
@Suite("RTMP command sequences of real and hostile clients")
struct RTMPCommandSequenceTests {
    typealias Admission = RTMPSessionPairingTests.RecordingAdmission

    enum Step: Sendable, CustomStringConvertible {
        case connect(String)
        case command(String, [AMF0Value])
        case createStream
        case publish(String)
        case play(String)
        case media
        case deleteStream
        case fcUnpublish(String)

        var description: String {
            switch self {
            case .connect(let app): "connect(\(app))"
            case .command(let name, _): name
            case .createStream: "createStream"
            case .publish(let name): "publish(\(name))"
            case .play(let name): "play(\(name))"
            case .media: "media"
            case .deleteStream: "deleteStream"
            case .fcUnpublish: "FCUnpublish"
            }
        }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var client: String
        var steps: [Step]
        /// A publisher of `live/cam` runs before the client connects (for players).
        var streamIsLive = false
        /// The `onStatus` codes the client hears, in order.
        var statuses: [String]
        /// Other commands the client must be answered (`_result` counts, `onFCPublish`).
        var answers: [String] = []
        var staysOpen: Bool
        /// Sessions the connection had: (kind, ended).
        var sessions: [(SessionKind, Bool)]

        var testDescription: String { client }
    }

    static let cases: [Case] = [
        Case(
            client: "ffmpeg publish",
            steps: [.connect("live"), .command("releaseStream", [.string("cam")]), .command("FCPublish", [.string("cam")]), .createStream, .publish("cam"), .media],
            statuses: ["NetStream.Publish.Start"], answers: ["_result", "_result", "onFCPublish", "_result", "_result"],
            staysOpen: true, sessions: [(.publish, false)]
        ),
        Case(
            client: "OBS publish, then stop",
            steps: [.connect("live"), .command("releaseStream", [.string("cam")]), .command("FCPublish", [.string("cam")]), .createStream, .publish("cam"), .media,
                    .fcUnpublish("cam"), .deleteStream],
            statuses: ["NetStream.Publish.Start"], answers: ["onFCPublish"],
            staysOpen: true, sessions: [(.publish, true)]
        ),
        Case(
            client: "GStreamer rtmp2sink publish",
            steps: [.connect("live"), .command("releaseStream", [.string("cam")]), .command("FCPublish", [.string("cam")]), .createStream, .publish("cam")],
            statuses: ["NetStream.Publish.Start"], staysOpen: true, sessions: [(.publish, false)]
        ),
        Case(
            client: "ffmpeg play",
            steps: [.connect("live"), .createStream, .command("_checkbw", []), .command("getStreamLength", [.string("cam")]), .play("cam")],
            streamIsLive: true,
            statuses: ["NetStream.Play.Reset", "NetStream.Play.Start"], staysOpen: true, sessions: [(.play, false)]
        ),
        Case(
            client: "rtmpdump (librtmp) play",
            steps: [.connect("live"), .createStream, .play("cam"), .command("receiveVideo", [.boolean(true)])],
            streamIsLive: true,
            statuses: ["NetStream.Play.Reset", "NetStream.Play.Start"], staysOpen: true, sessions: [(.play, false)]
        ),
        Case(
            client: "a player of a stream nobody publishes",
            steps: [.connect("live"), .createStream, .play("nobody")],
            statuses: ["NetStream.Play.StreamNotFound"], staysOpen: false, sessions: []
        ),
        Case(
            client: "hostile: publish before connect",
            steps: [.createStream, .publish("cam")],
            statuses: [], staysOpen: false, sessions: []
        ),
        Case(
            client: "hostile: a stream name that is not one",
            steps: [.connect("live"), .createStream, .publish("../etc")],
            statuses: ["NetStream.Publish.BadName"], staysOpen: false, sessions: []
        ),
        Case(
            client: "hostile: media without publish",
            steps: [.connect("live"), .createStream, .media],
            statuses: [], staysOpen: false, sessions: []
        ),
        Case(
            client: "hostile: an unknown command",
            steps: [.connect("live"), .command("setEverything", [.string("x")])],
            statuses: [], staysOpen: false, sessions: []
        ),
        Case(
            client: "hostile: an application name that is not one",
            steps: [.connect("a b/../c")],
            statuses: [], staysOpen: false, sessions: []
        ),
        Case(
            client: "hostile: a second publish on the same connection while publishing",
            steps: [.connect("live"), .createStream, .publish("cam"), .createStream, .publish("other")],
            statuses: ["NetStream.Publish.Start"], staysOpen: true, sessions: [(.publish, false)]
        ),
        Case(
            client: "a publisher that deletes its stream and publishes again",
            steps: [.connect("live"), .createStream, .publish("cam"), .deleteStream, .createStream, .publish("cam")],
            statuses: ["NetStream.Publish.Start", "NetStream.Publish.Start"], staysOpen: true, sessions: [(.publish, true), (.publish, false)]
        ),
    ]

    @Test(arguments: cases)
    func sequence(_ test: Case) throws {
        let admission = Admission()
        if test.streamIsLive {
            let source = try EmbeddedRTMPConnection(admission: admission, address: "192.0.2.1")
            source.handshake()
            source.connect()
            source.createStream()
            source.publish("cam")
            try #require(source.statusCodes == ["NetStream.Publish.Start"])
        }
        let before = (admission.publishers.withLock { $0.count }, admission.viewers.withLock { $0.count })
        let client = try EmbeddedRTMPConnection(admission: admission)
        client.handshake()
        var timestamp: UInt32 = 0
        for step in test.steps {
            switch step {
            case .connect(let app): client.connect(app: app)
            case .command(let name, let arguments): client.command(name, .null, arguments)
            case .createStream: client.createStream()
            case .publish(let name): client.publish(name)
            case .play(let name): client.play(name)
            case .media:
                client.sendVideo(timestamp: timestamp)
                timestamp += 33
            case .deleteStream: client.deleteStream()
            case .fcUnpublish(let name): client.command("FCUnpublish", .null, [.string(name)])
            }
        }
        client.advance(.seconds(1))  // a refusal's close waits for its answer to flush
        #expect(client.statusCodes == test.statuses, "\(test.client): \(test.steps)")
        let names = client.commands.map(\.name)
        for answer in Set(test.answers) {
            #expect(names.filter { $0 == answer }.count >= test.answers.filter { $0 == answer }.count, "\(test.client): answered \(names)")
        }
        #expect(client.isOpen == test.staysOpen, "\(test.client): open \(client.isOpen)")
        let publishers = admission.publishers.withLock { Array($0.dropFirst(before.0)) }
        let viewers = admission.viewers.withLock { Array($0.dropFirst(before.1)) }
        let sessions: [(SessionKind, Bool)] = publishers.map { (.publish, $0.hasEnded) } + viewers.map { (.play, $0.hasEnded) }
        #expect(sessions.map(\.0) == test.sessions.map(\.0) && sessions.map(\.1) == test.sessions.map(\.1), "\(test.client): sessions \(sessions)")
        if test.client == "ffmpeg play" {
            // getStreamLength is answered with a number, as ffmpeg reads it.
            let length = client.commands.first { $0.name == "_result" && $0.arguments.first?.numberValue == 0 }
            #expect(length != nil, "getStreamLength's answer: \(client.commands.map(\.name))")
        }
    }
}
