import AMF0
import Logging
import Media
import Metrics
import NIOCore
import Session

/// The connection's commands: `connect`, stream creation and deletion, `publish` and `play`
/// (which become session requests), and the names they carry.
extension RTMPServerConnectionHandler {
    // MARK: Commands

    func handle(_ message: CommandMessage, streamID: UInt32) throws(RTMPConnectionError) {
        let command: RTMPCommand
        do { command = try RTMPCommand(message) } catch { throw RTMPConnectionError(error) }
        if app == nil {
            guard case .connect = command else { throw .commandBeforeConnect(message.name) }
        }
        switch command {
        case .connect(let connect):
            try handleConnect(connect)
        case .releaseStream(let transactionID, let name), .fcUnpublish(let transactionID, let name):
            // Names are checked by the stream-name rule before anything is said about them.
            try checkEchoableName(name)
            // nginx-rtmp answers these with an empty `_result` when a reply is expected.
            if transactionID != 0 { send(CommandMessage.result(transactionID: transactionID).message(chunkStreamID: Self.connectionChunkStreamID)) }
        case .getStreamLength(let transactionID, let name):
            try checkEchoableName(name)
            // A number, as ffmpeg reads it (`_result`, id, null, length): 0, a live stream.
            // Anything else made every ffmpeg player warn "Unexpected reply on getStreamLength()".
            if transactionID != 0 {
                send(CommandMessage.result(transactionID: transactionID, arguments: [.number(0)]).message(chunkStreamID: Self.connectionChunkStreamID))
            }
        case .receiveAudio, .receiveVideo, .pause:
            break  // live streams ignore these, as nginx-rtmp does
        case .fcPublish(let transactionID, let name):
            // `onFCPublish` echoes the name: only a valid stream name (≤ 128 characters) is echoed.
            try checkEchoableName(name)
            if transactionID != 0 { send(CommandMessage.result(transactionID: transactionID).message(chunkStreamID: Self.connectionChunkStreamID)) }
            send(CommandMessage.onFCPublish(streamName: name).message(chunkStreamID: Self.connectionChunkStreamID))
        case .createStream(let transactionID):
            let id = nextStreamID
            nextStreamID &+= 1
            send(CommandMessage.createStreamResult(transactionID: transactionID, streamID: id).message(chunkStreamID: Self.connectionChunkStreamID))
        case .publish(_, let name, let type):
            try startPublish(rawName: name, type: type, streamID: streamID)
        case .play(_, let name, _, _, _):
            try startPlay(rawName: name, streamID: streamID)
        case .deleteStream, .closeStream:
            leaveRole(.left)
            role = .none
            // The connection may start another session, within the same deadline as the first.
            armSessionStartTimer()
        case .result, .error, .onStatus:
            break
        case .unknown(let name):
            // Harmless extensions some clients send; everything else is rejected so a
            // confused or hostile peer does not linger.
            switch name {
            case "FCSubscribe", "FCUnsubscribe", "_checkbw", "onBWDone", "onBWCheck", "seek":
                break
            default:
                throw .unknownCommand(name)
            }
        }
    }

    func handleConnect(_ connect: ConnectCommand) throws(RTMPConnectionError) {
        guard app == nil else { return }
        let app = connect.app.split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
        let trimmed = app.hasSuffix("/") ? String(app.dropLast()) : app
        guard Self.isValidApplication(trimmed) else {
            send(CommandMessage.connectError(transactionID: connect.transactionID, description: "invalid application name").message(chunkStreamID: Self.connectionChunkStreamID))
            throw .invalidStreamName(trimmed)
        }
        self.app = trimmed
        armSessionStartTimer()
        send(WindowAcknowledgementSize(windowSize: configuration.windowAcknowledgementSize).message())
        send(SetPeerBandwidth(windowSize: configuration.windowAcknowledgementSize, limitType: .dynamic).message())
        send(SetChunkSize(chunkSize: UInt32(configuration.outgoingChunkSize)).message())
        encoder.chunkSize = configuration.outgoingChunkSize
        // An Enhanced RTMP v2 client learns which of its capabilities the server has: of
        // those in `capsEx`, reconnect requests.
        let enhanced = connect.commandObject["capsEx"] != nil
        acceptsReconnectRequest = connect.advertises(ConnectCommand.reconnectCapability)
        send(CommandMessage.connectResult(
            transactionID: connect.transactionID, objectEncoding: connect.objectEncoding,
            capsEx: enhanced ? ConnectCommand.reconnectCapability : nil
        ).message(chunkStreamID: Self.connectionChunkStreamID))
    }

    /// Asks an Enhanced RTMP v2 publisher to reconnect (to `tcUrl`, or to the URL it used),
    /// once. The connection stays: the publisher opens its new one, moves at a keyframe and
    /// then closes this one, so viewers see no gap.
    func sendReconnectRequest(tcUrl: String?) {
        guard case .publishing = role, case .session = phase, !sentReconnectRequest else { return }
        sentReconnectRequest = true
        log(.notice, "asking the publisher to reconnect", metadata: ["to": "\(tcUrl ?? "its own URL")"])
        RTMPMetrics.reconnectRequests.increment()
        send(CommandMessage.reconnectRequest(tcUrl: tcUrl, description: "This server is going away; publish to another.").message(chunkStreamID: Self.connectionChunkStreamID))
        flushIfNeeded()
    }

    /// A name a command carries (FCPublish, releaseStream, FCUnpublish) must pass the stream
    /// name rule, query aside, before it is echoed or acted on; an empty name is allowed
    /// (some encoders send one). Anything else closes the connection with BadName.
    func checkEchoableName(_ rawName: String) throws(RTMPConnectionError) {
        let name = rawName.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        guard name.isEmpty || StreamPath.isValidComponent(name) else {
            status(.error, .publishBadName, "Invalid stream name", streamID: 0)
            throw .invalidStreamName(name)
        }
    }

    func armSessionStartTimer() {
        sessionTimer?.cancel()
        sessionTimer = schedule(after: configuration.sessionStartTimeout) { handler in
            handler.fail(.sessionStartTimeout, status: (.connectIdleTimeOut, "no publish or play within \(handler.configuration.sessionStartTimeout)"))
        }
    }

    /// Runs `body` on the event loop after `delay`, unless cancelled or the connection is gone.
    func schedule(after delay: Duration, _ body: @escaping (RTMPServerConnectionHandler) -> Void) -> Scheduled<Void>? {
        guard let context else { return nil }
        let bound = NIOLoopBound((self, body), eventLoop: context.eventLoop)
        return context.eventLoop.scheduleTask(in: .init(delay)) {
            let (handler, body) = bound.value
            body(handler)
        }
    }

    /// An application is `app`, or `app/name` for a viewer of one of the stream's rungs
    /// (`rtmp://host/app/name/rung`: RTMP clients send what precedes the last path element
    /// as the application). Publishing needs the first form (`streamPath(from:)`).
    static func isValidApplication(_ app: String) -> Bool {
        let parts = app.split(separator: "/", omittingEmptySubsequences: false)
        return (1...2).contains(parts.count) && parts.allSatisfy { StreamPath.isValidComponent($0) }
    }

    /// Splits `name?query` and validates the name; an invalid one is answered with
    /// `rejection` on the stream before the connection closes.
    func streamPath(from rawName: String, rejection: StatusCode, streamID: UInt32) throws(RTMPConnectionError) -> (StreamPath, String) {
        let parts = rawName.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let name = parts.first.map(String.init) ?? ""
        let query = parts.count > 1 ? String(parts[1]) : ""
        do {
            return (try StreamPath(app: app ?? "", name: name), query)
        } catch {
            status(.error, rejection, "Invalid stream name", streamID: streamID)
            throw .invalidStreamName(name)
        }
    }
}
