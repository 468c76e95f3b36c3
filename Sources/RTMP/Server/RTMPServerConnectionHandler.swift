import AMF0
import Logging
import Media
import Session
import Metrics
import NIOCore

/// One RTMP connection on the server side: handshake, chunk stream, commands, and then
/// either publishing into a hub or playing from one.
///
/// A single handler owns the whole connection so that bytes are counted exactly (for
/// acknowledgements) and messages go from the socket to the hub with no pipeline hops.
/// Protocol parsing is done by the pure `ServerHandshake` and `ChunkDecoder`; session
/// policy (who may publish or play) is the node's `SessionAdmission`: the handler turns
/// `publish` and `play` into protocol-neutral `PublishRequest`s and `PlayRequest`s.
final class RTMPServerConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum Phase {
        case handshake(ServerHandshake)
        case session
        case closing
    }

    private enum Role {
        case none
        /// Waiting for the admission's answer; messages that arrive meanwhile are held.
        case pending
        case publishing(PublishContext)
        case playing(PlayContext)
    }

    private struct PublishContext {
        var hub: StreamHub
        var id: StreamHub.PublisherID
        var path: StreamPath
        var announcedVideo = false
        var announcedAudio = false
    }

    /// A class, so that reading the role on a wake-up is one retain, not one per field.
    private final class PlayContext {
        let hub: StreamHub
        let subscriber: HubSubscriber
        let path: RenditionPath
        /// The shared format this viewer reads (`.rtmpChunks`), or nil when it needs its own chunking
        /// (a message stream id other than the shared one).
        let sharedFormat: OutputFormat?
        let streamID: UInt32
        /// What the admission was told at the start, told again at the end.
        let session: PlaySession

        init(hub: StreamHub, subscriber: HubSubscriber, path: RenditionPath, sharedFormat: OutputFormat?, streamID: UInt32, session: PlaySession) {
            self.hub = hub
            self.subscriber = subscriber
            self.path = path
            self.sharedFormat = sharedFormat
            self.streamID = streamID
            self.session = session
        }
    }

    /// What every connection of a listener shares, held once per listener: a viewer's
    /// handler is one of thousands, and a copy of the configuration (≈ 300 bytes), the
    /// admission and a logger with its own metadata in each cost ≈ 1 KiB a viewer.
    final class Environment: Sendable {
        let configuration: RTMPServerConfiguration
        let admission: any SessionAdmission
        let logger: Logger

        init(configuration: RTMPServerConfiguration, admission: any SessionAdmission, logger: Logger) {
            self.configuration = configuration
            self.admission = admission
            self.logger = logger
        }
    }

    private let environment: Environment
    private var configuration: RTMPServerConfiguration { environment.configuration }
    private var admission: any SessionAdmission { environment.admission }
    /// The last session notification (publisher gone, viewer started or left) sent to an
    /// async admission: each waits for the one before, so observers see them in order.
    private var lastNotification: Task<Void, Never>?
    private var notificationGeneration: UInt64 = 0
    /// The stream this connection publishes or plays, for its log lines.
    private var streamName: String?
    /// The current session's bytes (`SessionTraffic`), while it publishes or plays.
    private var traffic: SessionTraffic?
    /// The query of the play being admitted, for its session.
    private var playQuery = StreamQuery()
    private var phase: Phase
    private var role: Role = .none
    /// A viewer's media on its way to the socket, a slice at a time (`ViewerBacklog`).
    private var backlog = ViewerBacklog()
    private var decoder: ChunkDecoder
    private var encoder = ChunkEncoder()
    private var inbound: ByteBuffer?
    private var app: String?
    private var nextStreamID: UInt32 = RTMPChunkSerializer.streamID
    private var pendingMessages: [RTMPMessage] = []
    private var pendingBytes = 0
    private var context: ChannelHandlerContext?
    private var handshakeTimer: Scheduled<Void>?
    /// The deadline of the current session phase: `connect` after the handshake, then
    /// `publish` or `play` after `connect`.
    private var sessionTimer: Scheduled<Void>?
    /// Checks a publisher for media every third of the idle timeout.
    private var idleTimer: Scheduled<Void>?
    private var mediaSinceIdleCheck = false
    private var lastMediaSeen: NIODeadline = .now()
    /// Armed while the socket takes nothing (above the high water mark).
    private var stallTimer: Scheduled<Void>?
    /// Armed while a message is unfinished: checks that its bytes keep coming.
    private var messageProgressTimer: Scheduled<Void>?
    /// The channel's writability as its last change said: read once per viewer per wake-up,
    /// where asking the channel is a call through its existential and an atomic load.
    private var channelWritable = true
    private var closeTimer: Scheduled<Void>?
    private var warnedMetadata = false
    private var scheduledHubFlush: Scheduled<Void>?
    private var remoteAddress = "unknown"
    // Acknowledgements: the peer asks for one every `peerWindow` bytes it sends.
    private var bytesReceived: UInt64 = 0
    private var bytesAcknowledged: UInt64 = 0
    private var peerWindow: UInt64 = 2_500_000
    private var needsFlush = false
    /// Replies encoded since the last flush, handed to the channel as one buffer: a burst of
    /// small replies (acknowledgements, ping responses) costs one pending write, not one each,
    /// so the outbound bound in bytes is also a bound in memory.
    private var replies: ByteBuffer?
    /// Whether the client advertised Enhanced RTMP v2's reconnect capability in `connect`:
    /// a draining node may then ask it to publish elsewhere.
    private var acceptsReconnectRequest = false
    /// Whether a reconnect request was sent (once per connection).
    private var sentReconnectRequest = false
    /// Whether the librtmp habit of starting a chunk stream with a type 1 header was logged.
    private var loggedType1ChunkStreamStart = false
    /// NetConnection answers go on chunk stream 3, NetStream status on 5, as nginx-rtmp does.
    static let connectionChunkStreamID: UInt32 = 3
    static let streamChunkStreamID: UInt32 = 5

    convenience init(configuration: RTMPServerConfiguration, admission: any SessionAdmission, logger: Logger, random: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()) {
        self.init(environment: Environment(configuration: configuration, admission: admission, logger: logger), random: random)
    }

    init(environment: Environment, random: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()) {
        self.environment = environment
        let configuration = environment.configuration
        self.phase = .handshake(ServerHandshake(random: random))
        self.decoder = ChunkDecoder(limits: configuration.chunkLimits)
        // Media-sized messages only once the peer asks to publish (`startPublish`).
        self.decoder.acceptsMedia = false
    }

    /// Logs with the connection's metadata, made only for a line that is logged: kept on
    /// the logger, it was a dictionary per viewer for the life of the connection.
    private func log(
        _ level: Logger.Level, _ message: @autoclosure () -> Logger.Message, metadata extra: Logger.Metadata = [:],
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        let logger = environment.logger
        guard logger.logLevel <= level else { return }
        var metadata = extra
        metadata["conn"] = "\(remoteAddress)"
        if let app { metadata["app"] = "\(app)" }
        if let streamName { metadata["stream"] = "\(streamName)" }
        logger.log(level: level, message(), metadata: metadata, file: file, function: function, line: line)
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if let address = context.channel.remoteAddress {
            remoteAddress = "\(address.ipAddress ?? "?"):\(address.port ?? 0)"
        }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        handshakeTimer = context.eventLoop.scheduleTask(in: .init(configuration.handshakeTimeout)) {
            bound.value.fail(.handshakeTimeout)
        }
        if configuration.chunkLimits.nodeBudget != nil {
            // The node's budget picked this connection to pay for a shortage: it may hold a
            // stalled message and send nothing more, so it is closed from here. Weakly: the
            // decoder keeps the closure, and the handler the decoder.
            let weak = NIOLoopBound(WeakHandler(self), eventLoop: context.eventLoop)
            decoder.onShed = {
                weak.eventLoop.execute {
                    guard let handler = weak.value.handler else { return }
                    handler.fail(.chunk(.shedByNodeBudget(held: handler.decoder.bytesInReassembly)))
                }
            }
        }
        RTMPMetrics.connectionsOpened.increment()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        handshakeTimer?.cancel()
        sessionTimer?.cancel()
        idleTimer?.cancel()
        stallTimer?.cancel()
        messageProgressTimer?.cancel()
        closeTimer?.cancel()
        scheduledHubFlush?.cancel()
        leaveRole()
        decoder.releaseReservations()
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        leaveRole()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Closing: nothing more is processed, so nothing more is kept.
        if case .closing = phase { return }
        var bytes = unwrapInboundIn(data)
        bytesReceived &+= UInt64(bytes.readableBytes)
        traffic?.received(bytes.readableBytes)
        if inbound == nil || inbound?.readableBytes == 0 {
            inbound = bytes
        } else {
            inbound?.writeBuffer(&bytes)
        }
        process(context: context)
        if messageProgressTimer == nil, decoder.unfinishedMessages > 0, case .session = phase {
            armMessageProgressCheck()
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if case .publishing(let publish) = role { flushHub(publish.hub) }
        acknowledgeIfNeeded()
        flushIfNeeded()
        context.fireChannelReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        channelWritable = context.channel.isWritable
        if channelWritable {
            stallTimer?.cancel()
            stallTimer = nil
            drainSubscriber()
        } else if stallTimer == nil {
            stallTimer = schedule(after: configuration.writeStallTimeout) { $0.fail(.writeStalled) }
        }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? RTMPConnectionError {
            fail(error)
        } else {
            log(.debug, "connection error: \(error)")
            context.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is RTMPServerShutdown {
            shutDown()
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    // MARK: Inbound processing

    private func process(context: ChannelHandlerContext) {
        guard var buffer = inbound else { return }
        inbound = nil
        defer {
            if buffer.readableBytes > 0 {
                buffer.discardReadBytes()
                inbound = buffer
            }
        }
        do {
            if case .handshake(var handshake) = phase {
                let action: HandshakeAction
                do { action = try handshake.feed(&buffer) } catch { throw RTMPConnectionError.handshake(error) }
                phase = .handshake(handshake)
                switch action {
                case .needMoreData:
                    return
                case .send(let reply):
                    context.writeAndFlush(wrapOutboundOut(reply), promise: nil)
                    // C2 may already be in the buffer.
                    let next: HandshakeAction
                    do { next = try handshake.feed(&buffer) } catch { throw RTMPConnectionError.handshake(error) }
                    phase = .handshake(handshake)
                    guard next == .completed else { return }
                case .completed:
                    break
                }
                phase = .session
                handshakeTimer?.cancel()
                handshakeTimer = nil
                sessionTimer = schedule(after: configuration.connectTimeout) { $0.fail(.connectTimeout) }
            }
            while case .session = phase {
                let message: RTMPMessage?
                do { message = try decoder.next(from: &buffer) } catch { throw RTMPConnectionError.chunk(error) }
                guard let message else { break }
                if !loggedType1ChunkStreamStart, decoder.chunkStreamsStartedWithType1 > 0 {
                    loggedType1ChunkStreamStart = true
                    log(.debug, "peer starts chunk streams with a type 1 header (librtmp); stream ids inferred")
                }
                try handle(message)
            }
        } catch let error as RTMPConnectionError {
            fail(error)
        } catch {
            fail(.badMedia("\(error)"))
        }
    }

    private func handle(_ message: RTMPMessage) throws(RTMPConnectionError) {
        if case .pending = role {
            guard pendingMessages.count < configuration.maxPendingMessages,
                  pendingBytes + message.payload.readableBytes <= configuration.maxPendingBytes
            else {
                throw .tooManyPendingMessages(pendingMessages.count)
            }
            pendingBytes += message.payload.readableBytes
            pendingMessages.append(message)
            return
        }
        switch MessageType(rawValue: message.typeID) {
        case .setChunkSize, .abort:
            break  // applied by the chunk decoder itself
        case .acknowledgement:
            break  // we never throttle on the viewer's acknowledgements
        case .windowAcknowledgementSize:
            do {
                let size = try WindowAcknowledgementSize(from: message.payload)
                peerWindow = max(UInt64(size.windowSize), 4096)
            } catch { throw .message(error) }
        case .setPeerBandwidth:
            break
        case .userControl:
            let event: UserControl
            do { event = try UserControl(from: message.payload) } catch { throw .message(error) }
            if case .pingRequest(let timestamp) = event {
                send(UserControl.pingResponse(timestamp: timestamp).message())
            }
        case .commandAMF0, .commandAMF3:
            let command: CommandMessage
            do { command = try CommandMessage(from: message) } catch { throw RTMPConnectionError(error) }
            try handle(command, streamID: message.streamID)
        case .audio, .video, .dataAMF0, .dataAMF3:
            try handleMedia(message)
        case .sharedObjectAMF0, .sharedObjectAMF3, .aggregate, nil:
            // Shared objects and aggregates are Flash-era features no encoder we know
            // sends; ignore rather than reject so an odd client can still publish.
            log(.debug, "ignoring message type \(message.typeID)")
        }
    }

    // MARK: Commands

    private func handle(_ message: CommandMessage, streamID: UInt32) throws(RTMPConnectionError) {
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
            leaveRole()
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

    private func handleConnect(_ connect: ConnectCommand) throws(RTMPConnectionError) {
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
    private func sendReconnectRequest(tcUrl: String?) {
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
    private func checkEchoableName(_ rawName: String) throws(RTMPConnectionError) {
        let name = rawName.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        guard name.isEmpty || StreamPath.isValidComponent(name) else {
            status(.error, .publishBadName, "Invalid stream name", streamID: 0)
            throw .invalidStreamName(name)
        }
    }

    private func armSessionStartTimer() {
        sessionTimer?.cancel()
        sessionTimer = schedule(after: configuration.sessionStartTimeout) { handler in
            handler.fail(.sessionStartTimeout, status: (.connectIdleTimeOut, "no publish or play within \(handler.configuration.sessionStartTimeout)"))
        }
    }

    /// Runs `body` on the event loop after `delay`, unless cancelled or the connection is gone.
    private func schedule(after delay: Duration, _ body: @escaping (RTMPServerConnectionHandler) -> Void) -> Scheduled<Void>? {
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
    private func streamPath(from rawName: String, rejection: StatusCode, streamID: UInt32) throws(RTMPConnectionError) -> (StreamPath, String) {
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

    private func startPublish(rawName: String, type: String, streamID: UInt32) throws(RTMPConnectionError) {
        guard case .none = role else { return }
        let (path, query) = try streamPath(from: rawName, rejection: .publishBadName, streamID: streamID)
        guard let context else { return }
        decoder.mediaStreamID = streamID
        // Its media may follow at once, before the admission's answer.
        decoder.acceptsMedia = true
        sessionTimer?.cancel()
        sessionTimer = nil
        role = .pending
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        var reconnect: ReconnectRequester?
        if acceptsReconnectRequest {
            reconnect = { @Sendable tcUrl in
                bound.eventLoop.execute { bound.value.sendReconnectRequest(tcUrl: tcUrl) }
            }
        }
        let traffic = SessionTraffic()
        self.traffic = traffic
        let request = PublishRequest(path: path, query: StreamQuery(query), remoteAddress: remoteAddress, transport: .rtmp, evict: {
            bound.eventLoop.execute { bound.value.fail(.evicted) }
        }, requestReconnect: reconnect, traffic: traffic, kick: { reason in
            bound.eventLoop.execute { bound.value.kick(reason) }
        })
        let admission = admission
        let promise = context.eventLoop.makePromise(of: PublishDecision.self)
        if let immediate = admission as? any ImmediateSessionAdmission {
            // On the next tick, as a Task's answer would come: messages in this read are held.
            let decision = immediate.publishImmediately(request)
            context.eventLoop.execute { promise.succeed(decision) }
        } else {
            // After this connection's earlier notifications (a publisher that unpublished and
            // publishes again): observers see the old session end before the new one starts.
            let previous = lastNotification
            promise.completeWithTask {
                await previous?.value
                return await admission.publish(request)
            }
        }
        promise.futureResult.assumeIsolated().whenSuccess { decision in
            self.resolvePublish(decision, path: path, streamID: streamID)
        }
    }

    private func resolvePublish(_ decision: PublishDecision, path: StreamPath, streamID: UInt32) {
        guard case .pending = role, case .session = phase else {
            // The connection went away while we waited: give the stream back.
            if case .accept(let hub, let id) = decision {
                hub.detachPublisher(id: id)
                notifyUnpublished(PublishSession(path: path, hub: hub, id: id, transport: .rtmp, remoteAddress: remoteAddress))
            }
            return
        }
        switch decision {
        case .accept(let hub, let id):
            role = .publishing(PublishContext(hub: hub, id: id, path: path))
            // A publisher's reads grow with its bitrate (`ReceiveBuffers`).
            try? context?.channel.syncOptions?.setOption(.recvAllocator, value: ReceiveBuffers.publisher)
            try? context?.channel.syncOptions?.setOption(.maxMessagesPerRead, value: ReceiveBuffers.publisherReadsPerWakeUp)
            streamName = "\(path)"
            log(.info, "publishing")
            send(UserControl.streamBegin(streamID: streamID).message())
            status(.status, .publishStart, "\(path) is now published", streamID: streamID)
            RTMPMetrics.publishes.increment()
            armIdleTimer()
            replayPending()
        case .refuse(let refusal):
            log(.notice, "publish of \(path) refused: \(refusal.publishStatus.rawValue)")
            RTMPMetrics.refusedPublishes.increment()
            status(.error, refusal.publishStatus, refusal.description, streamID: streamID)
            closeAfterFlush()
        }
        flushIfNeeded()
    }

    private func startPlay(rawName: String, streamID: UInt32) throws(RTMPConnectionError) {
        guard case .none = role else { return }
        let parts = rawName.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let name = parts.first.map(String.init) ?? ""
        let query = parts.count > 1 ? String(parts[1]) : ""
        guard let path = RequestedRendition(app: app ?? "", name: name) else {
            status(.error, .playStreamNotFound, "Invalid stream name", streamID: streamID)
            throw .invalidStreamName(name)
        }
        guard let context else { return }
        sessionTimer?.cancel()
        sessionTimer = nil
        role = .pending
        let admission = admission
        let request = PlayRequest(path: path, query: StreamQuery(query), remoteAddress: remoteAddress, transport: .rtmp)
        playQuery = StreamQuery(query)
        let promise = context.eventLoop.makePromise(of: PlayDecision.self)
        if let immediate = admission as? any ImmediateSessionAdmission {
            let decision = immediate.playImmediately(request)
            context.eventLoop.execute { promise.succeed(decision) }
        } else {
            promise.completeWithTask { await admission.play(request) }
        }
        promise.futureResult.assumeIsolated().whenSuccess { decision in
            self.resolvePlay(decision, path: path, streamID: streamID)
        }
    }

    private func resolvePlay(_ decision: PlayDecision, path requested: RequestedRendition, streamID: UInt32) {
        guard case .pending = role, case .session = phase, let context else { return }
        switch decision {
        case .accept(let hub):
            let path = hub.path
            let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
            let shared = streamID == RTMPChunkSerializer.streamID && encoder.chunkSize == RTMPChunkSerializer.chunkSize
            let subscriber = HubSubscriber(format: shared ? .rtmpChunks : nil, maxQueueBytes: hub.configuration.subscriberQueueBytes, eventLoop: context.eventLoop) { _ in
                bound.value.drainSubscriber()  // on this connection's loop
            }
            let traffic = SessionTraffic()
            self.traffic = traffic
            let session = PlaySession(path: path, transport: .rtmp, remoteAddress: remoteAddress, query: playQuery, traffic: traffic, kick: { reason in
                bound.eventLoop.execute { bound.value.kick(reason) }
            })
            role = .playing(PlayContext(hub: hub, subscriber: subscriber, path: path, sharedFormat: shared ? .rtmpChunks : nil, streamID: streamID, session: session))
            streamName = "\(path)"
            log(.debug, "playing")
            send(UserControl.streamBegin(streamID: streamID).message())
            status(.status, .playReset, "Playing and resetting \(path)", streamID: streamID)
            status(.status, .playStart, "Started playing \(path)", streamID: streamID)
            send(DataMessage.sampleAccess().message(streamID: streamID))
            flushIfNeeded()
            RTMPMetrics.plays.increment()
            notifyPlay(session, started: true)
            if !hub.subscribe(subscriber) {
                status(.status, .playUnpublishNotify, "\(path) ended", streamID: streamID)
                closeAfterFlush()
            }
        case .refuse(let refusal):
            log(.debug, "play of \(requested) refused: \(refusal)")
            status(.error, refusal.playStatus, refusal.description, streamID: streamID)
            closeAfterFlush()
        }
        flushIfNeeded()
    }

    /// Checks every third of the timeout whether media came since the last check: one timer a
    /// publisher, and nothing on the media path but a flag.
    private func armIdleTimer() {
        lastMediaSeen = .now()
        let timeout = configuration.publisherIdleTimeout
        let period = timeout / 3
        idleTimer = schedule(after: period) { handler in
            handler.checkIdle(timeout: timeout, period: period)
        }
    }

    private func checkIdle(timeout: Duration, period: Duration) {
        guard case .publishing = role else { return }
        let now = NIODeadline.now()
        if mediaSinceIdleCheck {
            mediaSinceIdleCheck = false
            lastMediaSeen = now
        } else if now - lastMediaSeen >= .init(timeout) {
            fail(.publisherIdle, status: (.connectIdleTimeOut, "no media for \(timeout)"))
            return
        }
        idleTimer = schedule(after: period) { $0.checkIdle(timeout: timeout, period: period) }
    }

    /// Checks every fifth of `messageStallTimeout` that each unfinished message received bytes;
    /// one that received none for five checks in a row closes the connection. Armed only
    /// while a message is unfinished after a read, so a viewer never has it.
    private func armMessageProgressCheck() {
        let period = configuration.messageStallTimeout / Self.messageProgressChecks
        messageProgressTimer = schedule(after: period) { handler in
            handler.messageProgressTimer = nil
            guard case .session = handler.phase else { return }
            if handler.decoder.checkProgress() >= Self.messageProgressChecks {
                handler.fail(.messageStalled)
            } else if handler.decoder.unfinishedMessages > 0 {
                handler.armMessageProgressCheck()
            }
        }
    }

    private static let messageProgressChecks = 5

    private func replayPending() {
        let held = pendingMessages
        pendingMessages = []
        pendingBytes = 0
        do {
            for message in held { try handle(message) }
        } catch {
            fail(error)
        }
        if case .publishing(let publish) = role { flushHub(publish.hub) }
    }

    /// Wakes the hub's subscribers; when the hub coalesces this burst into a later
    /// wake-up, makes sure that wake-up happens even if no further burst arrives.
    private func flushHub(_ hub: StreamHub) {
        guard let deferral = hub.flush(), scheduledHubFlush == nil, let context else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        scheduledHubFlush = context.eventLoop.scheduleTask(in: deferral) {
            bound.value.scheduledHubFlush = nil
            hub.flush(force: true)
        }
    }

    // MARK: Media

    private func handleMedia(_ message: RTMPMessage) throws(RTMPConnectionError) {
        guard case .publishing(var publish) = role else {
            // Players may send nothing but control; media from a non-publisher is abuse.
            throw .mediaWithoutPublish
        }
        mediaSinceIdleCheck = true
        let frame: MediaFrame
        switch MessageType(rawValue: message.typeID) {
        case .dataAMF0, .dataAMF3:
            // Only metadata is kept; other data messages (cue points, text) are dropped.
            guard let body = metadataBody(message) else { return }
            frame = MediaFrame(kind: .script, timestamp: Int64(message.timestamp), payload: body)
        case .audio, .video:
            guard message.payload.readableBytes > 0 else { return }  // some encoders send empty keep-alives
            let kind: MediaKind = message.typeID == MediaKind.audio.rawValue ? .audio : .video
            do {
                frame = try MediaFrame.classified(kind: kind, timestamp: Int64(message.timestamp), payload: message.payload)
                if frame.isSequenceHeader {
                    try validateSequenceHeader(frame, publish: &publish)
                }
            } catch {
                throw .badMedia("\(error)")
            }
        default:
            return
        }
        role = .publishing(publish)
        if !publish.hub.publish(frame, publisher: publish.id) {
            throw .evicted
        }
    }

    /// The `onMetaData` body players get, or nil when the message carries none or breaks the
    /// metadata limits (then it is dropped with a warning, once per connection, and counted;
    /// the stream goes on). Both the received size and the re-encoded size are checked:
    /// repairing invalid UTF-8 triples a string.
    private func metadataBody(_ message: RTMPMessage) -> ByteBuffer? {
        let limit = configuration.maxMetadataBytes
        if message.payload.readableBytes > limit {
            dropMetadata(reason: "too_large", "\(message.payload.readableBytes) bytes, over the \(limit)-byte limit")
            return nil
        }
        let data: DataMessage
        do {
            data = try DataMessage(from: message, decoder: AMF0Decoder(maxValues: configuration.maxMetadataValues))
        } catch .amf0(.tooManyValues) {
            dropMetadata(reason: "too_many_values", "over \(configuration.maxMetadataValues) values")
            return nil
        } catch {
            return nil
        }
        guard let body = data.metadataBody() else { return nil }
        if body.readableBytes > limit {
            dropMetadata(reason: "too_large", "\(body.readableBytes) bytes once re-encoded, over the \(limit)-byte limit")
            return nil
        }
        return body
    }

    private func dropMetadata(reason: String, _ why: String) {
        RTMPMetrics.droppedMetadata(reason: reason)
        if !warnedMetadata {
            warnedMetadata = true
            log(.warning, "dropping metadata: \(why); the stream goes on")
        }
    }

    /// Parses configuration records before anyone receives them: a garbage record would
    /// otherwise break every player of the stream.
    private func validateSequenceHeader(_ frame: MediaFrame, publish: inout PublishContext) throws {
        let summary = try frame.validatedConfigurationRecord()
        switch frame.kind {
        case .video:
            if !publish.announcedVideo, let summary { log(.info, "\(summary)") }
            publish.announcedVideo = true
        case .audio:
            if !publish.announcedAudio, let summary { log(.info, "\(summary)") }
            publish.announcedAudio = true
        case .script:
            break
        }
    }

    // MARK: Playback

    private func drainSubscriber() {
        // Not `context.channel.isActive`: a closed channel's `channelInactive` leaves the role.
        guard case .playing(let play) = role, let context else { return }
        guard channelWritable else { return }  // resumed by channelWritabilityChanged
        writeReplies()  // Play.Start and the rest go before the media
        let traffic = play.session.traffic
        let outcome = backlog.pump(from: play.subscriber, eventLoop: context.eventLoop) { unit, promise in
            switch unit {
            case .bytes(let bytes):
                // A whole burst in the shared format, as the hub merged it.
                traffic?.sent(bytes.readableBytes)
                context.write(wrapOutboundOut(bytes), promise: promise)
            case .packet(let packet):
                if let format = play.sharedFormat, let bytes = packet.bytes(for: format) {
                    traffic?.sent(bytes.readableBytes)
                    context.write(wrapOutboundOut(bytes), promise: promise)
                } else {
                    let bytes = RTMPChunkSerializer.serialize(packet.frame, streamID: play.streamID, chunkSize: encoder.chunkSize, allocator: context.channel.allocator)
                    traffic?.sent(bytes.readableBytes)
                    context.write(wrapOutboundOut(bytes), promise: promise)
                }
            }
        }
        switch outcome {
        case .sliceInFlight(let written):
            context.flush()
            needsFlush = false
            // Still writable: the socket took the slice, or NIO holds it below the high-water
            // mark. Hand over the next either way, so a socket that stopped taking data fills
            // the channel and its write-stall timeout starts (no wake-up comes while this
            // backlog is unfinished). Unwritable: the next slice once this one is written.
            if channelWritable { return drainSubscriber() }
            written.assumeIsolated().whenComplete { _ in
                self.drainSubscriber()
            }
            return
        case .ended:
            send(UserControl.streamEOF(streamID: play.streamID).message())
            status(.status, .playUnpublishNotify, "\(play.path) ended", streamID: play.streamID)
            closeAfterFlush()  // writes the two replies above
        case .idle:
            break
        }
        context.flush()
        needsFlush = false
    }

    // MARK: Output and teardown

    private func status(_ level: StatusLevel, _ code: StatusCode, _ description: String, streamID: UInt32) {
        send(CommandMessage.onStatus(level: level, code: code, description: description).message(chunkStreamID: Self.streamChunkStreamID, streamID: streamID))
    }

    private func send(_ message: RTMPMessage) {
        guard let context else { return }
        // Replies are bounded by construction (validated names, fixed texts); this guard keeps
        // a bug from reaching the encoder's precondition.
        guard message.payload.readableBytes <= 0xFFFFFF else {
            log(.error, "refusing to send a \(message.payload.readableBytes)-byte reply (type \(message.typeID))")
            fail(.replyTooLarge(message.payload.readableBytes))
            return
        }
        // A peer that does not read its replies (acknowledgements, ping responses) is not
        // allowed to grow our outbound buffer without bound.
        let unwritten = replies?.readableBytes ?? 0
        if !context.channel.isWritable || unwritten > configuration.maxOutboundBytes {
            let queued = unwritten + ((try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0)
            if queued > configuration.maxOutboundBytes {
                fail(.outboundBacklog(queued))
                return
            }
        }
        var buffer = replies ?? context.channel.allocator.buffer(capacity: max(512, message.payload.readableBytes + 32))
        replies = nil
        encoder.encode(message, into: &buffer)
        replies = buffer
        needsFlush = true
    }

    /// Hands the replies encoded so far to the channel (before any media written after them).
    private func writeReplies() {
        guard let context, let buffer = replies else { return }
        replies = nil
        traffic?.sent(buffer.readableBytes)
        context.write(wrapOutboundOut(buffer), promise: nil)
    }

    private func flushIfNeeded() {
        guard needsFlush, let context else { return }
        needsFlush = false
        writeReplies()
        context.flush()
    }

    private func acknowledgeIfNeeded() {
        guard bytesReceived - bytesAcknowledged >= peerWindow else { return }
        bytesAcknowledged = bytesReceived
        send(Acknowledgement(sequenceNumber: UInt32(truncatingIfNeeded: bytesReceived)).message())
    }

    /// Tells the admission that publisher `id` of `path` is gone: at once for an immediate
    /// admission, from a Task otherwise.
    private func notifyUnpublished(_ session: PublishSession) {
        let admission = admission
        if let immediate = admission as? any ImmediateSessionAdmission {
            immediate.unpublishedImmediately(session)
        } else {
            chained { await admission.unpublished(session) }
        }
    }

    /// Runs `body` in a Task after this connection's earlier notifications. The handler
    /// holds the last Task only until it has run: a finished Task still takes about a
    /// kilobyte (its allocator's first slab), which every long-lived viewer would carry.
    private func chained(_ body: @escaping @Sendable () async -> Void) {
        let previous = lastNotification
        notificationGeneration &+= 1
        let generation = notificationGeneration
        let bound = context.map { NIOLoopBound(self, eventLoop: $0.eventLoop) }
        lastNotification = Task {
            await previous?.value
            await body()
            guard let bound else { return }
            bound.eventLoop.execute {
                let handler = bound.value
                if handler.notificationGeneration == generation { handler.lastNotification = nil }
            }
        }
    }

    /// Tells the admission that this connection's viewer started (`started`) or left.
    private func notifyPlay(_ session: PlaySession, started: Bool) {
        let admission = admission
        if let immediate = admission as? any ImmediateSessionAdmission {
            started ? immediate.playStartedImmediately(session) : immediate.playEndedImmediately(session)
        } else {
            chained {
                if started {
                    await admission.playStarted(session)
                } else {
                    await admission.playEnded(session)
                }
            }
        }
    }

    /// Gives up the stream or the subscription this connection holds. Idempotent.
    private func leaveRole() {
        switch role {
        case .publishing(let publish):
            let path = publish.path
            let id = publish.id
            // Frames from this connection's last read must reach viewers before the end.
            publish.hub.flush(force: true)
            publish.hub.detachPublisher(id: id)
            notifyUnpublished(PublishSession(path: path, hub: publish.hub, id: id, transport: .rtmp, remoteAddress: remoteAddress))
            log(.info, "unpublished")
        case .playing(let play):
            play.hub.unsubscribe(play.subscriber)
            notifyPlay(play.session, started: false)
            let stats = play.subscriber.statistics
            if stats.skips > 0 {
                log(.info, "viewer left after \(stats.skips) queue overflows (\(stats.droppedFrames) frames skipped)")
            }
        case .none, .pending:
            break
        }
        role = .none
        traffic = nil
        backlog = ViewerBacklog()
        idleTimer?.cancel()
        idleTimer = nil
        pendingMessages = []
        pendingBytes = 0
    }

    /// Closes the connection for `error`: logged and counted once. With a `status`, the peer
    /// is told why first (an onStatus on the connection's stream 0) and the close waits for
    /// that answer to flush, within `closeFlushTimeout`.
    private func fail(_ error: RTMPConnectionError, status: (code: StatusCode, description: String)? = nil) {
        guard let context else { return }
        if case .closing = phase { return }
        if error == .evicted {
            log(.notice, "closing: \(error)")
        } else {
            log(.warning, "closing connection: \(error)")
        }
        RTMPMetrics.closed(reason: error.reason)
        if let status {
            self.status(.error, status.code, status.description, streamID: 0)
            closeAfterFlush()
            return
        }
        phase = .closing
        leaveRole()
        flushIfNeeded()
        context.close(promise: nil)
    }

    /// Writes the replies so far, then closes. With `linger`, the connection stays open that
    /// long after them (what the peer sends meanwhile is discarded): a publisher only reads
    /// between its writes, and would otherwise see a broken pipe before the reason.
    private func closeAfterFlush(linger: Duration? = nil) {
        guard let context else { return }
        phase = .closing
        leaveRole()
        needsFlush = false
        writeReplies()
        // A peer that reads nothing would keep the final answer, and the socket, for ever.
        closeTimer = schedule(after: linger ?? configuration.closeFlushTimeout) { handler in
            handler.context?.close(promise: nil)
        }
        let flushed = context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0)))
        guard linger == nil else { return }
        flushed.assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    /// An operator's kick (`DELETE /api/v1/sessions/{id}`): the peer is told why, then the
    /// connection closes. A player gets its stream's end and `NetStream.Play.Stop`; a
    /// publisher an error-level `NetConnection.Connect.Closed`, which ffmpeg prints.
    private func kick(_ reason: String) {
        guard context != nil, case .session = phase else { return }
        log(.notice, "kicked: \(reason)")
        RTMPMetrics.closed(reason: "kicked")
        switch role {
        case .playing(let play):
            send(UserControl.streamEOF(streamID: play.streamID).message())
            status(.status, .playStop, "kicked by an operator: \(reason)", streamID: play.streamID)
        case .publishing:
            status(.error, .connectClosed, "kicked by an operator: \(reason)", streamID: 0)
            closeAfterFlush(linger: Self.kickLinger)
            return
        case .none, .pending:
            break
        }
        closeAfterFlush()
    }

    /// How long a kicked publisher's connection stays open after the reason: long enough for
    /// a client that reads between writes (ffmpeg) to read it, short enough to be nothing.
    static let kickLinger: Duration = .milliseconds(750)

    /// Server shutdown: tell the peer why and close.
    private func shutDown() {
        switch role {
        case .playing(let play):
            send(UserControl.streamEOF(streamID: play.streamID).message())
            status(.status, .playUnpublishNotify, "server shutting down", streamID: play.streamID)
        case .publishing:
            status(.status, .unpublishSuccess, "server shutting down", streamID: RTMPChunkSerializer.streamID)
        case .none, .pending:
            break
        }
        closeAfterFlush()
    }
}

@available(*, unavailable)
extension RTMPServerConnectionHandler: Sendable {}

/// A handler held weakly, for a closure that the handler itself keeps (through its decoder).
private final class WeakHandler {
    weak var handler: RTMPServerConnectionHandler?

    init(_ handler: RTMPServerConnectionHandler) {
        self.handler = handler
    }
}

/// Sent through a connection's pipeline when the server shuts down gracefully.
public struct RTMPServerShutdown: Sendable {
    public init() {}
}
