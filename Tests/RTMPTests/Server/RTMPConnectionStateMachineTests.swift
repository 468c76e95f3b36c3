import AMF0
import Media
import Session
import Testing

@testable import RTMP

/// The connection's stages as a table, with no channel: each row is what a client sends (and
/// what the admission answers), and what the machine must answer, ask for and end up in.
/// The same sequences run through the NIO shell in `RTMPCommandSequenceTests`.
@Suite("RTMP connection state machine")
struct RTMPConnectionStateMachineTests {
    typealias Machine = RTMPConnectionStateMachine<String, String>

    enum Event: Sendable {
        case handshake
        case command(RTMPCommand, streamID: UInt32 = 0)
        case admitPublish(ticket: UInt64)
        case admitPlay(ticket: UInt64)
        case refuse(ticket: UInt64)
        case close
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var events: [Event]
        var actions: [Machine.Action]
        var failure: RTMPConnectionError?
        /// The stage at the end: handshaking, awaitingConnect, connected, requesting(publish|play),
        /// publishing, playing, closing.
        var stage: String
        /// What the admission answers returned, in order (whether each still applied).
        var answers: [Bool] = []
        var testDescription: String { name }
    }

    static func connect(_ app: String) -> Event {
        .command(.connect(ConnectCommand(transactionID: 1, app: app)))
    }

    static func accepted(_ app: String) -> [Machine.Action] {
        [.arm(.sessionStart), .acceptConnect(ConnectCommand(transactionID: 1, app: app))]
    }

    static let cam = try! StreamPath(app: "live", name: "cam")

    static let rows: [Row] = [
        Row(
            name: "ffmpeg publishes: FMLE commands, createStream, publish, an accepted answer",
            events: [
                .handshake, connect("live"), .command(.releaseStream(transactionID: 2, streamName: "cam")),
                .command(.fcPublish(transactionID: 3, streamName: "cam")), .command(.createStream(transactionID: 4)),
                .command(.publish(transactionID: 5, streamName: "cam", publishType: "live"), streamID: 1), .admitPublish(ticket: 1),
            ],
            actions: [.arm(.connect)] + accepted("live") + [
                .reply(.result(transactionID: 2)), .reply(.result(transactionID: 3)), .reply(.onFCPublish(streamName: "cam")),
                .reply(.createStreamResult(transactionID: 4, streamID: 1)),
                .cancelDeadline, .requestPublish(cam, query: "", streamID: 1, ticket: 1),
            ],
            stage: "publishing", answers: [true]
        ),
        Row(
            name: "OBS publishes with a key in the name, then unpublishes and deletes the stream",
            events: [
                .handshake, connect("live"), .command(.createStream(transactionID: 2)),
                .command(.publish(transactionID: 3, streamName: "cam?key=s3cret", publishType: "live"), streamID: 1), .admitPublish(ticket: 1),
                .command(.fcUnpublish(transactionID: 4, streamName: "cam")), .command(.deleteStream(transactionID: 5, streamID: 1)),
            ],
            actions: [.arm(.connect)] + accepted("live") + [
                .reply(.createStreamResult(transactionID: 2, streamID: 1)),
                .cancelDeadline, .requestPublish(cam, query: "key=s3cret", streamID: 1, ticket: 1),
                .reply(.result(transactionID: 4)), .leaveSession, .arm(.sessionStart),
            ],
            stage: "connected", answers: [true]
        ),
        Row(
            name: "rtmpdump plays a rung: the application carries the stream, getStreamLength is 0",
            events: [
                .handshake, connect("abr/demo"), .command(.createStream(transactionID: 2)),
                .command(.getStreamLength(transactionID: 3, streamName: "360p")),
                .command(.play(transactionID: 4, streamName: "360p", start: -2, duration: -1, reset: true), streamID: 1), .admitPlay(ticket: 1),
            ],
            actions: [.arm(.connect)] + accepted("abr/demo") + [
                .reply(.createStreamResult(transactionID: 2, streamID: 1)), .reply(.result(transactionID: 3, arguments: [.number(0)])),
                .cancelDeadline, .requestPlay(RequestedRendition(app: "abr/demo", name: "360p")!, query: "", streamID: 1, ticket: 1),
            ],
            stage: "playing", answers: [true]
        ),
        Row(
            name: "GStreamer's bandwidth checks and FCSubscribe are tolerated",
            events: [.handshake, connect("live"), .command(.unknown("_checkbw")), .command(.unknown("FCSubscribe")), .command(.receiveVideo(true))],
            actions: [.arm(.connect)] + accepted("live"),
            stage: "connected"
        ),
        Row(
            name: "a refused publish returns the connection to connected (the shell then closes it)",
            events: [.handshake, connect("live"), .command(.publish(transactionID: 2, streamName: "cam", publishType: "live"), streamID: 1), .refuse(ticket: 1)],
            actions: [.arm(.connect)] + accepted("live") + [.cancelDeadline, .requestPublish(cam, query: "", streamID: 1, ticket: 1)],
            stage: "connected", answers: [true]
        ),
        Row(
            name: "an answer that comes after the client left, or for an older request, does not apply",
            events: [
                .handshake, connect("live"), .command(.publish(transactionID: 2, streamName: "cam", publishType: "live"), streamID: 1),
                .command(.deleteStream(transactionID: 3, streamID: 1)),
                .command(.publish(transactionID: 4, streamName: "cam", publishType: "live"), streamID: 1),
                .admitPublish(ticket: 1), .refuse(ticket: 1), .admitPublish(ticket: 2),
            ],
            actions: [.arm(.connect)] + accepted("live") + [
                .cancelDeadline, .requestPublish(cam, query: "", streamID: 1, ticket: 1), .leaveSession, .arm(.sessionStart),
                .cancelDeadline, .requestPublish(cam, query: "", streamID: 1, ticket: 2),
            ],
            stage: "publishing", answers: [false, false, true]
        ),
        Row(
            name: "an answer of the wrong kind does not apply",
            events: [.handshake, connect("live"), .command(.play(transactionID: 2, streamName: "cam", start: -2, duration: -1, reset: false), streamID: 1), .admitPublish(ticket: 1)],
            actions: [.arm(.connect)] + accepted("live") + [
                .cancelDeadline, .requestPlay(RequestedRendition(app: "live", name: "cam")!, query: "", streamID: 1, ticket: 1),
            ],
            stage: "requesting(play)", answers: [false]
        ),
        Row(
            name: "a second publish or a play while a session is asked for or live is ignored",
            events: [
                .handshake, connect("live"), .command(.publish(transactionID: 2, streamName: "cam", publishType: "live"), streamID: 1),
                .command(.publish(transactionID: 3, streamName: "other", publishType: "live"), streamID: 1), .admitPublish(ticket: 1),
                .command(.play(transactionID: 4, streamName: "cam", start: -2, duration: -1, reset: false), streamID: 1),
            ],
            actions: [.arm(.connect)] + accepted("live") + [.cancelDeadline, .requestPublish(cam, query: "", streamID: 1, ticket: 1)],
            stage: "publishing", answers: [true]
        ),
        Row(
            name: "createStream hands out increasing stream ids",
            events: [.handshake, connect("live"), .command(.createStream(transactionID: 2)), .command(.createStream(transactionID: 3)), .command(.createStream(transactionID: 4))],
            actions: [.arm(.connect)] + accepted("live") + [
                .reply(.createStreamResult(transactionID: 2, streamID: 1)), .reply(.createStreamResult(transactionID: 3, streamID: 2)),
                .reply(.createStreamResult(transactionID: 4, streamID: 3)),
            ],
            stage: "connected"
        ),
        Row(
            name: "a second connect changes nothing",
            events: [.handshake, connect("live"), connect("other")],
            actions: [.arm(.connect)] + accepted("live"),
            stage: "connected"
        ),
        Row(
            name: "a query on connect's application is not part of it, and goes with the publish, before the name's own",
            events: [.handshake, connect("live?token=abc"), .command(.publish(transactionID: 2, streamName: "cam?key=k", publishType: "live"), streamID: 1)],
            actions: [.arm(.connect), .arm(.sessionStart), .acceptConnect(ConnectCommand(transactionID: 1, app: "live?token=abc")),
                      .cancelDeadline, .requestPublish(cam, query: "token=abc&key=k", streamID: 1, ticket: 1)],
            stage: "requesting(publish)"
        ),
        Row(
            name: "a query on connect's application goes with a play",
            events: [.handshake, connect("live?token=abc/"), .command(.play(transactionID: 2, streamName: "cam", start: -2, duration: -1, reset: false), streamID: 1)],
            actions: [.arm(.connect), .arm(.sessionStart), .acceptConnect(ConnectCommand(transactionID: 1, app: "live?token=abc/")),
                      .cancelDeadline, .requestPlay(RequestedRendition(app: "live", name: "cam")!, query: "token=abc", streamID: 1, ticket: 1)],
            stage: "requesting(play)"
        ),
        // Hostile or broken clients.
        Row(
            name: "commands before the handshake completes are ignored",
            events: [connect("live"), .command(.createStream(transactionID: 2))],
            actions: [], stage: "handshaking"
        ),
        Row(
            name: "a command before connect closes the connection",
            events: [.handshake, .command(.createStream(transactionID: 2))],
            actions: [.arm(.connect)], failure: .commandBeforeConnect("createStream"), stage: "awaitingConnect"
        ),
        Row(
            name: "publish before connect closes the connection",
            events: [.handshake, .command(.publish(transactionID: 2, streamName: "cam", publishType: "live"))],
            actions: [.arm(.connect)], failure: .commandBeforeConnect("publish"), stage: "awaitingConnect"
        ),
        Row(
            name: "an invalid application is refused with _error",
            events: [.handshake, connect("../etc")],
            actions: [.arm(.connect), .reply(.connectError(transactionID: 1, description: "invalid application name"))],
            failure: .invalidStreamName("../etc"), stage: "awaitingConnect"
        ),
        Row(
            name: "three path elements are not an application",
            events: [.handshake, connect("a/b/c")],
            actions: [.arm(.connect), .reply(.connectError(transactionID: 1, description: "invalid application name"))],
            failure: .invalidStreamName("a/b/c"), stage: "awaitingConnect"
        ),
        Row(
            name: "publishing an invalid name is answered BadName",
            events: [.handshake, connect("live"), .command(.publish(transactionID: 2, streamName: "a b", publishType: "live"), streamID: 1)],
            actions: [.arm(.connect)] + accepted("live") + [.reply(.status(.error, .publishBadName, "Invalid stream name", streamID: 1))],
            failure: .invalidStreamName("a b"), stage: "connected"
        ),
        Row(
            name: "publishing into a rung's application is answered BadName",
            events: [.handshake, connect("abr/demo"), .command(.publish(transactionID: 2, streamName: "360p", publishType: "live"), streamID: 1)],
            actions: [.arm(.connect)] + accepted("abr/demo") + [.reply(.status(.error, .publishBadName, "Invalid stream name", streamID: 1))],
            failure: .invalidStreamName("360p"), stage: "connected"
        ),
        Row(
            name: "playing an invalid name is answered StreamNotFound",
            events: [.handshake, connect("live"), .command(.play(transactionID: 2, streamName: "", start: -2, duration: -1, reset: false), streamID: 1)],
            actions: [.arm(.connect)] + accepted("live") + [.reply(.status(.error, .playStreamNotFound, "Invalid stream name", streamID: 1))],
            failure: .invalidStreamName(""), stage: "connected"
        ),
        Row(
            name: "an overlong FCPublish name is not echoed",
            events: [.handshake, connect("live"), .command(.fcPublish(transactionID: 2, streamName: String(repeating: "x", count: 500)))],
            actions: [.arm(.connect)] + accepted("live") + [.reply(.status(.error, .publishBadName, "Invalid stream name", streamID: 0))],
            failure: .invalidStreamName(String(repeating: "x", count: 500)), stage: "connected"
        ),
        Row(
            name: "an empty FCPublish name is answered (some encoders send one)",
            events: [.handshake, connect("live"), .command(.fcPublish(transactionID: 0, streamName: ""))],
            actions: [.arm(.connect)] + accepted("live") + [.reply(.onFCPublish(streamName: ""))],
            stage: "connected"
        ),
        Row(
            name: "an unknown command closes the connection",
            events: [.handshake, connect("live"), .command(.unknown("evil"))],
            actions: [.arm(.connect)] + accepted("live"), failure: .unknownCommand("evil"), stage: "connected"
        ),
        Row(
            name: "nothing is processed once closing",
            events: [.handshake, connect("live"), .close, .command(.createStream(transactionID: 2)), .command(.unknown("evil"))],
            actions: [.arm(.connect)] + accepted("live"), stage: "closing"
        ),
    ]

    @Test("Rows", arguments: rows)
    func row(_ row: Row) {
        var machine = Machine()
        var actions: [Machine.Action] = []
        var failure: RTMPConnectionError?
        var answers: [Bool] = []
        for event in row.events {
            switch event {
            case .handshake:
                actions += machine.handshakeCompleted()
            case .command(let command, let streamID):
                let outcome = machine.received(command, streamID: streamID)
                actions += outcome.actions
                if let error = outcome.failure { failure = error }
            case .admitPublish(let ticket):
                answers.append(machine.admitted(ticket: ticket, .publishing("publisher")))
            case .admitPlay(let ticket):
                answers.append(machine.admitted(ticket: ticket, .playing("viewer")))
            case .refuse(let ticket):
                answers.append(machine.refused(ticket: ticket))
            case .close:
                _ = machine.close()
            }
            if failure != nil { break }
        }
        #expect(actions == row.actions)
        #expect(failure == row.failure)
        #expect(Self.label(machine.stage) == row.stage)
        #expect(answers == row.answers)
    }

    @Test("Leaving gives back the session held, once; closing gives back what is left")
    func leavingAndClosing() {
        var machine = Machine()
        _ = machine.handshakeCompleted()
        _ = machine.received(.connect(ConnectCommand(transactionID: 1, app: "live")), streamID: 0)
        _ = machine.received(.play(transactionID: 2, streamName: "cam", start: -2, duration: -1, reset: false), streamID: 1)
        #expect(machine.isAwaitingAdmission)
        let viewing = machine.admitted(ticket: 1, .playing("viewer"))
        #expect(viewing)
        #expect(machine.playing == "viewer")
        let outcome = machine.received(.deleteStream(transactionID: 3, streamID: 1), streamID: 0)
        guard case .playing("viewer") = outcome.left else {
            Issue.record("deleteStream did not give the viewer back: \(String(describing: outcome.left))")
            return
        }
        let again = machine.leaveSession()
        #expect(again == nil)
        _ = machine.received(.publish(transactionID: 4, streamName: "cam", publishType: "live"), streamID: 1)
        let publishing = machine.admitted(ticket: 2, .publishing("publisher"))
        #expect(publishing)
        guard case .publishing("publisher") = machine.close() else {
            Issue.record("closing did not give the publisher back")
            return
        }
        #expect(machine.isClosing && !machine.isOpen)
        let closedAgain = machine.close()
        #expect(closedAgain == nil)
    }

    static func label(_ stage: Machine.Stage) -> String {
        switch stage {
        case .handshaking: "handshaking"
        case .awaitingConnect: "awaitingConnect"
        case .connected: "connected"
        case .requesting(let kind, _): "requesting(\(kind.rawValue))"
        case .publishing: "publishing"
        case .playing: "playing"
        case .closing: "closing"
        }
    }
}
