import AMF0
import Logging
import Media
import Metrics
import NIOCore
import Session

/// The connection's commands: decoded here, decided by the state machine
/// (`RTMPConnectionStateMachine`), and the machine's actions performed on the channel.
extension RTMPServerConnectionHandler {
    // MARK: Commands

    func handle(_ message: CommandMessage, streamID: UInt32) throws(RTMPConnectionError) {
        let command: RTMPCommand
        do { command = try RTMPCommand(message) } catch { throw RTMPConnectionError(error) }
        let outcome = machine.received(command, streamID: streamID)
        for action in outcome.actions {
            perform(action, left: outcome.left)
        }
        if let failure = outcome.failure { throw failure }
    }

    func perform(_ action: Machine.Action, left: Machine.Held? = nil) {
        switch action {
        case .reply(let reply):
            send(reply)
        case .acceptConnect(let connect):
            acceptConnect(connect)
        case .arm(.connect):
            sessionTimer?.cancel()
            sessionTimer = schedule(after: configuration.connectTimeout) { $0.fail(.connectTimeout) }
        case .arm(.sessionStart):
            sessionTimer?.cancel()
            sessionTimer = schedule(after: configuration.sessionStartTimeout) { handler in
                handler.fail(.sessionStartTimeout, status: (.connectIdleTimeOut, "no publish or play within \(handler.configuration.sessionStartTimeout)"))
            }
        case .cancelDeadline:
            sessionTimer?.cancel()
            sessionTimer = nil
        case .requestPublish(let path, let query, let streamID, let ticket):
            requestPublish(path, query: query, streamID: streamID, ticket: ticket)
        case .requestPlay(let path, let query, let streamID, let ticket):
            requestPlay(path, query: query, streamID: streamID, ticket: ticket)
        case .leaveSession:
            release(left, .left)
        }
    }

    func send(_ reply: Machine.Reply) {
        switch reply {
        case .result(let transactionID, let arguments):
            send(CommandMessage.result(transactionID: transactionID, arguments: arguments).message(chunkStreamID: Self.connectionChunkStreamID))
        case .onFCPublish(let name):
            send(CommandMessage.onFCPublish(streamName: name).message(chunkStreamID: Self.connectionChunkStreamID))
        case .createStreamResult(let transactionID, let streamID):
            send(CommandMessage.createStreamResult(transactionID: transactionID, streamID: streamID).message(chunkStreamID: Self.connectionChunkStreamID))
        case .connectError(let transactionID, let description):
            send(CommandMessage.connectError(transactionID: transactionID, description: description).message(chunkStreamID: Self.connectionChunkStreamID))
        case .status(let level, let code, let description, let streamID):
            status(level, code, description, streamID: streamID)
        }
    }

    /// Answers an accepted `connect`: the window and chunk sizes, then `_result`.
    func acceptConnect(_ connect: ConnectCommand) {
        send(WindowAcknowledgementSize(windowSize: configuration.windowAcknowledgementSize).message())
        send(SetPeerBandwidth(windowSize: configuration.windowAcknowledgementSize, limitType: .dynamic).message())
        send(SetChunkSize(chunkSize: UInt32(configuration.outgoingChunkSize)).message())
        encoder.chunkSize = configuration.outgoingChunkSize
        // An Enhanced RTMP v2 client learns which of its capabilities the server has: of
        // those in `capsEx`, reconnect requests.
        let enhanced = connect.commandObject["capsEx"] != nil
        acceptsReconnectRequest = connect.advertises(ConnectCommand.reconnectCapability)
        codecs = configuration.negotiateVideoCodecs ? connect.codecs : nil
        send(CommandMessage.connectResult(
            transactionID: connect.transactionID, objectEncoding: connect.objectEncoding,
            capsEx: enhanced ? ConnectCommand.reconnectCapability : nil
        ).message(chunkStreamID: Self.connectionChunkStreamID))
    }

    /// Asks an Enhanced RTMP v2 publisher to reconnect (to `tcUrl`, or to the URL it used),
    /// once. The connection stays: the publisher opens its new one, moves at a keyframe and
    /// then closes this one, so viewers see no gap.
    func sendReconnectRequest(tcUrl: String?) {
        guard machine.publishing != nil, !sentReconnectRequest else { return }
        sentReconnectRequest = true
        log(.notice, "asking the publisher to reconnect", metadata: ["to": "\(tcUrl ?? "its own URL")"])
        RTMPMetrics.reconnectRequests.increment()
        send(CommandMessage.reconnectRequest(tcUrl: tcUrl, description: "This server is going away; publish to another.").message(chunkStreamID: Self.connectionChunkStreamID))
        flushIfNeeded()
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
}
