import AMF0
import Media
import Session

/// The stages of a server connection and what each command does in each, as a value with no
/// I/O: handshake → awaiting `connect` → connected → (asking the admission →) publishing or
/// playing → connected again after `deleteStream` → closing.
///
/// The NIO handler (`RTMPServerConnectionHandler`) is the shell: it feeds the machine the
/// commands it decodes and the admission's answers, and performs the actions the machine
/// returns (replies, deadlines, session requests). Which command is allowed when, which
/// names are valid, which stream ids are handed out and whether a late answer still applies
/// are decided here, and tested as tables without a channel.
///
/// `Publishing` and `Playing` are what the shell keeps for a live session (its hub,
/// subscriber, session handle); the machine only holds them, so that a stage and its
/// session can never disagree.
struct RTMPConnectionStateMachine<Publishing, Playing> {
    enum Stage {
        case handshaking
        /// The handshake is done; only `connect` is allowed.
        case awaitingConnect
        /// `connect` was accepted: streams may be created, and one session started.
        case connected
        /// A `publish` or `play` waits for the admission's answer, identified by `ticket`.
        case requesting(SessionKind, ticket: UInt64)
        case publishing(Publishing)
        case playing(Playing)
        /// Closing: nothing more is processed.
        case closing
    }

    /// The session a connection held when it left it (`deleteStream`, a close).
    enum Held {
        case publishing(Publishing)
        case playing(Playing)
    }

    /// An answer to the client, on the stream the RTMP conventions put it on.
    enum Reply: Equatable {
        /// `_result` on the connection's chunk stream.
        case result(transactionID: Double, arguments: [AMF0Value] = [])
        case onFCPublish(streamName: String)
        case createStreamResult(transactionID: Double, streamID: UInt32)
        /// `_error` for a refused `connect`.
        case connectError(transactionID: Double, description: String)
        /// `onStatus` on a message stream.
        case status(StatusLevel, StatusCode, String, streamID: UInt32)
    }

    /// The deadlines of the stages.
    enum Deadline: Equatable {
        /// For `connect`, after the handshake.
        case connect
        /// For `publish` or `play`, after `connect` or after a session ends.
        case sessionStart
    }

    enum Action: Equatable {
        case reply(Reply)
        /// Answer `connect` (window, bandwidth, chunk size, `_result`): the shell knows the sizes.
        case acceptConnect(ConnectCommand)
        case arm(Deadline)
        case cancelDeadline
        /// Ask the admission for a publisher's session; its answer comes back with `ticket`.
        case requestPublish(StreamPath, query: String, streamID: UInt32, ticket: UInt64)
        /// Ask the admission for a viewer's session; its answer comes back with `ticket`.
        case requestPlay(RequestedRendition, query: String, streamID: UInt32, ticket: UInt64)
        /// Give up the session the connection held (`Outcome.left`; the end reason is the
        /// client's: it left), and whatever it held for an answer still to come.
        case leaveSession
    }

    /// What a command led to: actions to perform in order, then, with a `failure`, the close.
    struct Outcome {
        var actions: [Action] = []
        var failure: RTMPConnectionError?
        /// The session `.leaveSession` gives up, when the connection held one.
        var left: Held?
    }

    private(set) var stage: Stage = .handshaking
    /// The application `connect` named (`live`, or `app/name` for a viewer of a rung).
    private(set) var app: String?
    /// The query on `connect`'s application (`live?token=…`, as ffmpeg sends a URL's query
    /// put after the application): it goes with each publish and play, before the name's.
    private(set) var appQuery = ""
    /// The message stream id `createStream` hands out next.
    private(set) var nextStreamID: UInt32 = RTMPChunkSerializer.streamID
    private var nextTicket: UInt64 = 0

    /// After the handshake and before the close: commands are processed.
    var isOpen: Bool {
        switch stage {
        case .handshaking, .closing: false
        default: true
        }
    }

    var isClosing: Bool {
        if case .closing = stage { return true }
        return false
    }

    /// Messages that arrive now are held until the admission answers.
    var isAwaitingAdmission: Bool {
        if case .requesting = stage { return true }
        return false
    }

    var publishing: Publishing? {
        if case .publishing(let publishing) = stage { return publishing }
        return nil
    }

    var playing: Playing? {
        if case .playing(let playing) = stage { return playing }
        return nil
    }

    // MARK: Events

    mutating func handshakeCompleted() -> [Action] {
        guard case .handshaking = stage else { return [] }
        stage = .awaitingConnect
        return [.arm(.connect)]
    }

    mutating func received(_ command: RTMPCommand, streamID: UInt32) -> Outcome {
        switch stage {
        case .handshaking, .closing:
            return Outcome()
        case .awaitingConnect:
            guard case .connect(let connect) = command else {
                return Outcome(failure: .commandBeforeConnect(command.name))
            }
            return self.connect(connect)
        case .connected, .requesting, .publishing, .playing:
            break
        }
        switch command {
        case .connect:
            return Outcome()  // a second `connect` changes nothing
        case .releaseStream(let transactionID, let name), .fcUnpublish(let transactionID, let name):
            // Names are checked by the stream-name rule before anything is said about them.
            if let refusal = Self.refuseUnechoable(name) { return refusal }
            // nginx-rtmp answers these with an empty `_result` when a reply is expected.
            return Outcome(actions: transactionID != 0 ? [.reply(.result(transactionID: transactionID))] : [])
        case .getStreamLength(let transactionID, let name):
            if let refusal = Self.refuseUnechoable(name) { return refusal }
            // A number, as ffmpeg reads it (`_result`, id, null, length): 0, a live stream.
            // Anything else made every ffmpeg player warn "Unexpected reply on getStreamLength()".
            return Outcome(actions: transactionID != 0 ? [.reply(.result(transactionID: transactionID, arguments: [.number(0)]))] : [])
        case .fcPublish(let transactionID, let name):
            // `onFCPublish` echoes the name: only a valid stream name (≤ 128 characters) is echoed.
            if let refusal = Self.refuseUnechoable(name) { return refusal }
            var actions: [Action] = transactionID != 0 ? [.reply(.result(transactionID: transactionID))] : []
            actions.append(.reply(.onFCPublish(streamName: name)))
            return Outcome(actions: actions)
        case .createStream(let transactionID):
            let id = nextStreamID
            nextStreamID &+= 1
            return Outcome(actions: [.reply(.createStreamResult(transactionID: transactionID, streamID: id))])
        case .publish(_, let name, _):
            return publish(rawName: name, streamID: streamID)
        case .play(_, let name, _, _, _):
            return play(rawName: name, streamID: streamID)
        case .deleteStream, .closeStream:
            // The connection may start another session, within the same deadline as the first.
            let left = leaveSession()
            return Outcome(actions: [.leaveSession, .arm(.sessionStart)], left: left)
        case .receiveAudio, .receiveVideo, .pause, .result, .error, .onStatus:
            return Outcome()  // live streams ignore these, as nginx-rtmp does
        case .unknown(let name):
            // Harmless extensions some clients send; everything else is refused so a
            // confused or hostile peer does not linger.
            return Self.toleratedUnknownCommands.contains(name) ? Outcome() : Outcome(failure: .unknownCommand(name))
        }
    }

    /// Whether the connection still waits for the answer to the request with `ticket`.
    func awaits(ticket: UInt64) -> Bool {
        if case .requesting(_, let waiting) = stage { return waiting == ticket }
        return false
    }

    /// The admission accepted the request with `ticket`: true when it still applies (the
    /// connection still waits for it), and the session is then the connection's. False when
    /// the connection left or closed meanwhile, or asked again since: the caller ends the
    /// session it was given.
    mutating func admitted(ticket: UInt64, _ held: Held) -> Bool {
        guard case .requesting(let kind, let waiting) = stage, waiting == ticket else { return false }
        switch (kind, held) {
        case (.publish, .publishing(let publishing)): stage = .publishing(publishing)
        case (.play, .playing(let playing)): stage = .playing(playing)
        default: return false
        }
        return true
    }

    /// The admission refused the request with `ticket`: true when it still applies (the
    /// caller tells the client and closes).
    mutating func refused(ticket: UInt64) -> Bool {
        guard case .requesting(_, let waiting) = stage, waiting == ticket else { return false }
        stage = .connected
        return true
    }

    /// Leaves the current session, if any, and returns what it held; the connection stays.
    mutating func leaveSession() -> Held? {
        let held: Held?
        switch stage {
        case .publishing(let publishing): held = .publishing(publishing)
        case .playing(let playing): held = .playing(playing)
        case .requesting: held = nil
        case .handshaking, .awaitingConnect, .connected, .closing: return nil
        }
        stage = .connected
        return held
    }

    /// Starts the close and returns the session the connection held, if any.
    mutating func close() -> Held? {
        let held = leaveSession()
        stage = .closing
        return held
    }

    // MARK: Commands

    private mutating func connect(_ connect: ConnectCommand) -> Outcome {
        let (app, query) = Self.split(connect.app)
        let trimmed = app.hasSuffix("/") ? String(app.dropLast()) : app
        guard Self.isValidApplication(trimmed) else {
            return Outcome(
                actions: [.reply(.connectError(transactionID: connect.transactionID, description: "invalid application name"))],
                failure: .invalidStreamName(trimmed)
            )
        }
        self.app = trimmed
        self.appQuery = query.hasSuffix("/") ? String(query.dropLast()) : query
        stage = .connected
        return Outcome(actions: [.arm(.sessionStart), .acceptConnect(connect)])
    }

    private mutating func publish(rawName: String, streamID: UInt32) -> Outcome {
        guard case .connected = stage else { return Outcome() }  // one session at a time
        let (name, query) = Self.split(rawName, after: appQuery)
        guard let path = try? StreamPath(app: app ?? "", name: name) else {
            return Outcome(actions: [.reply(.status(.error, .publishBadName, "Invalid stream name", streamID: streamID))], failure: .invalidStreamName(name))
        }
        nextTicket &+= 1
        stage = .requesting(.publish, ticket: nextTicket)
        return Outcome(actions: [.cancelDeadline, .requestPublish(path, query: query, streamID: streamID, ticket: nextTicket)])
    }

    private mutating func play(rawName: String, streamID: UInt32) -> Outcome {
        guard case .connected = stage else { return Outcome() }
        let (name, query) = Self.split(rawName, after: appQuery)
        guard let path = RequestedRendition(app: app ?? "", name: name) else {
            return Outcome(actions: [.reply(.status(.error, .playStreamNotFound, "Invalid stream name", streamID: streamID))], failure: .invalidStreamName(name))
        }
        nextTicket &+= 1
        stage = .requesting(.play, ticket: nextTicket)
        return Outcome(actions: [.cancelDeadline, .requestPlay(path, query: query, streamID: streamID, ticket: nextTicket)])
    }

    // MARK: Names

    /// Commands some clients send that a live server ignores (bandwidth checks, FMS
    /// subscriptions, `seek`).
    static var toleratedUnknownCommands: Set<String> {
        ["FCSubscribe", "FCUnsubscribe", "_checkbw", "onBWDone", "onBWCheck", "seek"]
    }

    /// `name?query`, split at the first `?`.
    static func split(_ rawName: String) -> (name: String, query: String) {
        let parts = rawName.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        return (parts.first.map(String.init) ?? "", parts.count > 1 ? String(parts[1]) : "")
    }

    /// `name?query`, with `appQuery` before the name's own parameters.
    static func split(_ rawName: String, after appQuery: String) -> (name: String, query: String) {
        let (name, query) = split(rawName)
        return (name, StreamQuery(appQuery).merging(StreamQuery(query)).raw)
    }

    /// A name a command carries (FCPublish, releaseStream, FCUnpublish, getStreamLength) must
    /// pass the stream name rule, query aside, before it is echoed or acted on; an empty name
    /// is allowed (some encoders send one). Anything else closes the connection with BadName.
    static func refuseUnechoable(_ rawName: String) -> Outcome? {
        let name = split(rawName).name
        guard !name.isEmpty, !StreamPath.isValidComponent(name) else { return nil }
        return Outcome(actions: [.reply(.status(.error, .publishBadName, "Invalid stream name", streamID: 0))], failure: .invalidStreamName(name))
    }

    /// An application is `app`, or `app/name` for a viewer of one of the stream's rungs
    /// (`rtmp://host/app/name/rung`: RTMP clients send what precedes the last path element
    /// as the application). Publishing needs the first form.
    static func isValidApplication(_ app: String) -> Bool {
        let parts = app.split(separator: "/", omittingEmptySubsequences: false)
        return (1...2).contains(parts.count) && parts.allSatisfy { StreamPath.isValidComponent($0) }
    }
}

extension RTMPCommand {
    /// The command's name on the wire, for a refusal's log line.
    var name: String {
        switch self {
        case .connect: "connect"
        case .releaseStream: "releaseStream"
        case .fcPublish: "FCPublish"
        case .fcUnpublish: "FCUnpublish"
        case .createStream: "createStream"
        case .publish: "publish"
        case .play: "play"
        case .deleteStream: "deleteStream"
        case .closeStream: "closeStream"
        case .getStreamLength: "getStreamLength"
        case .pause: "pause"
        case .receiveAudio: "receiveAudio"
        case .receiveVideo: "receiveVideo"
        case .result: "_result"
        case .error: "_error"
        case .onStatus: "onStatus"
        case .unknown(let name): name
        }
    }
}
