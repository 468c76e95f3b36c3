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

    typealias Machine = RTMPConnectionStateMachine<PublishContext, PlayContext>

    /// A publisher's session and what the connection learned of its stream. A class: the
    /// state machine holds it, and the media path marks it without writing the stage back.
    final class PublishContext {
        /// The publisher's session: the connection ends it as it leaves.
        let session: PublishSession
        var hub: StreamHub { session.hub }
        var id: StreamHub.PublisherID { session.id }
        var path: StreamPath { session.path }
        var announcedVideo = false
        var announcedAudio = false
        /// A multitrack publisher's other video tracks (trackId 1…), each a rendition of the
        /// stream (`track1`, …) with a hub of its own.
        var tracks: [UInt8: TrackState] = [:]
        /// Track ids past `maxTracks`, dropped (each counted and logged once).
        var droppedTracks: Set<UInt8> = []
        /// A multitrack publisher's other audio tracks (trackId 1…: a second language, a
        /// commentary), each an audio-only rendition (`audio1`, …) with a hub of its own,
        /// which HLS masters list as alternate audio (`EXT-X-MEDIA:TYPE=AUDIO`).
        var audioTracks: [UInt8: TrackState] = [:]
        /// Audio track ids past `maxAudioTracks`, dropped (each counted and logged once).
        var droppedAudioTracks: Set<UInt8> = []
        /// The configuration of each track ended for silence while the connection went on,
        /// or refused by the admission, by kind and id: a keyframe (an audio frame) of it asks
        /// for it again, as encoders do not send a track's configuration twice. Bounded
        /// (`keep`): at most `mostKeptConfigurations`, each a sequence start of at most
        /// `mostKeptConfigurationBytes`.
        var keptTrackConfigurations: [TrackKey: MediaFrame] = [:]
        static let mostKeptConfigurations = 16
        static let mostKeptConfigurationBytes = 64 * 1024

        /// Keeps `header` as track `key`'s configuration. A header larger than any real
        /// configuration record is not kept (its track then waits for a new sequence start);
        /// past `mostKeptConfigurations` another track's is forgotten, as its track would
        /// have to send its configuration again.
        func keep(_ header: MediaFrame, for key: TrackKey) {
            guard header.payload.readableBytes <= Self.mostKeptConfigurationBytes else {
                keptTrackConfigurations[key] = nil
                return
            }
            if keptTrackConfigurations[key] == nil, keptTrackConfigurations.count >= Self.mostKeptConfigurations,
               let other = keptTrackConfigurations.keys.first {
                keptTrackConfigurations[other] = nil
            }
            keptTrackConfigurations[key] = header
        }
        /// Each open track's coded frames of its kind at the last idle check (a video
        /// track's hub also takes the publisher's audio).
        var trackFramesAtCheck: [TrackKey: Int] = [:]
        /// The publisher's own `onMetaData` value (as it last sent it), and the timestamp of
        /// its latest message: a multitrack stream's metadata is sent again with its open
        /// tracks listed (`TrackIdInfoMaps`) whenever they change.
        var publisherMetadata: AMF0Value?
        var latestTimestamp: Int64 = 0
        /// The track ids the stream's metadata lists now (video, audio).
        var listedTracks: (video: [UInt8], audio: [UInt8]) = ([], [])

        /// The open tracks' ids, in order (video, audio): what the metadata should list.
        var openTrackIDs: (video: [UInt8], audio: [UInt8]) {
            func open(_ tracks: [UInt8: TrackState]) -> [UInt8] {
                tracks.compactMap { if case .open = $0.value { $0.key } else { nil } }.sorted()
            }
            return (open(tracks), open(audioTracks))
        }

        struct TrackKey: Hashable {
            var kind: TrackKind
            var id: UInt8
        }

        enum TrackState {
            /// Asked of the admission; the track's latest sequence start waits for the answer
            /// (its coded frames until then are dropped: a player starts at a keyframe anyway).
            /// `refusals`: how often it was refused before (for the wait before the next ask).
            /// `start`: the frame that asked again after a refusal (a keyframe; audio: any
            /// frame), which the track starts with when the answer opens it, unless another
            /// frame of the track came meanwhile (then it starts at its next keyframe).
            case opening(sequenceHeader: MediaFrame, refusals: Int, start: MediaFrame? = nil)
            /// `started` once a keyframe went in: frames before it (the track opened mid-GOP)
            /// would make a player's first picture undecodable.
            case open(PublishSession, started: Bool)
            /// Refused for the `refusals`th time at `at`: asked again, with its sequence start
            /// or its kept configuration, once `retryDelay(after:)` has passed.
            case refused(at: NIODeadline, refusals: Int)
        }

        /// The open video tracks' sessions. Lazily, without an array: it is walked for every
        /// audio frame (track 0's audio goes to every video track).
        var openVideoTracks: some Sequence<PublishSession> {
            tracks.values.lazy.compactMap { if case .open(let session, _) = $0 { session } else { nil } }
        }

        /// Calls `body` with every open track's session, video and audio: on every read, and
        /// at the end.
        func forEachOpenTrack(_ body: (PublishSession) -> Void) {
            for session in openVideoTracks { body(session) }
            for case .open(let session, _) in audioTracks.values { body(session) }
        }

        init(session: PublishSession) {
            self.session = session
        }
    }

    /// A class, so that reading the role on a wake-up is one retain, not one per field.
    final class PlayContext {
        let hub: StreamHub
        let subscriber: HubSubscriber
        let path: RenditionPath
        /// The shared format this viewer reads (`.rtmpChunks`), or nil when it needs its own chunking
        /// (a message stream id other than the shared one).
        let sharedFormat: OutputFormat?
        let streamID: UInt32
        /// The viewer's session: the connection starts it and ends it.
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
        /// The listener's, shared by its connections: a peer that reconnects in a loop gets
        /// `connectionLogBurst` lines per 10 s, and the count of those held back with the next.
        let logLimiter: LogRateLimiter

        init(configuration: RTMPServerConfiguration, admission: any SessionAdmission, logger: Logger, logLimiter: LogRateLimiter = LogRateLimiter(burst: 20)) {
            self.configuration = configuration
            self.admission = admission
            self.logger = logger
            self.logLimiter = logLimiter
        }
    }

    let environment: Environment
    var configuration: RTMPServerConfiguration { environment.configuration }
    var admission: any SessionAdmission { environment.admission }
    /// The stream this connection publishes or plays, for its log lines.
    var streamName: String?
    /// The current session's bytes (`SessionTraffic`), while it publishes or plays.
    var traffic: SessionTraffic?
    /// The connection's stage and its session (`RTMPConnectionStateMachine`).
    var machine = Machine()
    /// The handshake's bytes, until it completes.
    var handshake: ServerHandshake
    /// A viewer's media on its way to the socket, a slice at a time (`ViewerBacklog`).
    var backlog = ViewerBacklog()
    var decoder: ChunkDecoder
    var encoder = ChunkEncoder()
    var inbound: ByteBuffer?
    var app: String? { machine.app }
    var pendingMessages: [RTMPMessage] = []
    var pendingBytes = 0
    var context: ChannelHandlerContext?
    var handshakeTimer: Scheduled<Void>?
    /// The deadline of the current session phase: `connect` after the handshake, then
    /// `publish` or `play` after `connect`.
    var sessionTimer: Scheduled<Void>?
    /// Checks a publisher for media every third of the idle timeout.
    var idleTimer: Scheduled<Void>?
    var mediaSinceIdleCheck = false
    var lastMediaSeen: NIODeadline = .now()
    /// Armed while the socket takes nothing (above the high water mark).
    var stallTimer: Scheduled<Void>?
    /// Armed while a message is unfinished: checks that its bytes keep coming.
    var messageProgressTimer: Scheduled<Void>?
    /// The channel's writability as its last change said: read once per viewer per wake-up,
    /// where asking the channel is a call through its existential and an atomic load.
    var channelWritable = true
    var closeTimer: Scheduled<Void>?
    var warnedMetadata = false
    var scheduledHubFlush: Scheduled<Void>?
    var remoteAddress = "unknown"
    // Acknowledgements: the peer asks for one every `peerWindow` bytes it sends.
    var bytesReceived: UInt64 = 0
    var bytesAcknowledged: UInt64 = 0
    var peerWindow: UInt64 = 2_500_000
    var needsFlush = false
    /// Replies encoded since the last flush, handed to the channel as one buffer: a burst of
    /// small replies (acknowledgements, ping responses) costs one pending write, not one each,
    /// so the outbound bound in bytes is also a bound in memory.
    var replies: ByteBuffer?
    /// Whether the client advertised Enhanced RTMP v2's reconnect capability in `connect`:
    /// a draining node may then ask it to publish elsewhere.
    var acceptsReconnectRequest = false
    /// The codecs the client announced on `connect`, asked of its plays; nil when the
    /// listener does not negotiate (`negotiateVideoCodecs`).
    var codecs: ClientCodecs?
    /// Whether a reconnect request was sent (once per connection).
    var sentReconnectRequest = false
    /// Whether the librtmp habit of starting a chunk stream with a type 1 header was logged.
    var loggedType1ChunkStreamStart = false
    /// NetConnection answers go on chunk stream 3, NetStream status on 5, as nginx-rtmp does.
    static let connectionChunkStreamID: UInt32 = 3
    static let streamChunkStreamID: UInt32 = 5

    convenience init(configuration: RTMPServerConfiguration, admission: any SessionAdmission, logger: Logger, random: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()) {
        self.init(environment: Environment(configuration: configuration, admission: admission, logger: logger), random: random)
    }

    init(environment: Environment, random: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()) {
        self.environment = environment
        let configuration = environment.configuration
        self.handshake = ServerHandshake(random: random)
        self.decoder = ChunkDecoder(limits: configuration.chunkLimits)
        // Media-sized messages only once the peer asks to publish (`startPublish`).
        self.decoder.acceptsMedia = false
    }

    /// Logs with the connection's metadata, made only for a line that is logged: kept on
    /// the logger, it was a dictionary per viewer for the life of the connection.
    func log(
        _ level: Logger.Level, _ message: @autoclosure () -> Logger.Message, metadata extra: Logger.Metadata = [:],
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        let logger = environment.logger
        guard logger.logLevel <= level else { return }
        // Per client address, not per connection: a flood comes as many short connections.
        // Loopback clients (a local proxy or restreamer) are exempt as from the per-address
        // connection limit, unless `limitLoopbackConnections` says otherwise.
        let host = Self.host(of: remoteAddress)
        var verdict = LogRateLimiter.Verdict(allowed: true, suppressed: 0)
        if environment.configuration.connectionLimits.limitLoopback || !ConnectionLimiter.isLoopback(host) {
            verdict = environment.logLimiter.check(host)
        }
        guard verdict.allowed else {
            RTMPMetrics.logLinesHeldBack.increment()
            return
        }
        var metadata = extra
        if verdict.suppressed > 0 { metadata["linesHeldBack"] = "\(verdict.suppressed)" }
        metadata["conn"] = "\(remoteAddress)"
        if let app { metadata["app"] = "\(app)" }
        if let streamName { metadata["stream"] = "\(streamName)" }
        logger.log(level: level, message(), metadata: metadata, file: file, function: function, line: line)
    }

    /// "address:port" without the port (an IPv6 address keeps its colons).
    static func host(of address: String) -> String {
        guard let colon = address.lastIndex(of: ":") else { return address }
        return String(address[..<colon])
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
        release(machine.close(), .left)
        decoder.releaseReservations()
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        release(machine.close(), .left)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Closing: nothing more is processed, so nothing more is kept.
        if machine.isClosing { return }
        var bytes = unwrapInboundIn(data)
        bytesReceived &+= UInt64(bytes.readableBytes)
        traffic?.received(bytes.readableBytes)
        if inbound == nil || inbound?.readableBytes == 0 {
            inbound = bytes
        } else {
            inbound?.writeBuffer(&bytes)
        }
        process(context: context)
        if messageProgressTimer == nil, decoder.unfinishedMessages > 0, machine.isOpen {
            armMessageProgressCheck()
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if let publish = machine.publishing {
            flushHub(publish.hub)
            // A track's hub is woken at once: its viewers are few (one rung of a ladder each).
            publish.forEachOpenTrack { $0.hub.flush(force: true) }
        }
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

    func process(context: ChannelHandlerContext) {
        guard var buffer = inbound else { return }
        inbound = nil
        defer {
            if buffer.readableBytes > 0 {
                buffer.discardReadBytes()
                inbound = buffer
            }
        }
        do {
            if case .handshaking = machine.stage {
                let action: HandshakeAction
                do { action = try handshake.feed(&buffer) } catch { throw RTMPConnectionError.handshake(error) }
                switch action {
                case .needMoreData:
                    return
                case .send(let reply):
                    context.writeAndFlush(wrapOutboundOut(reply), promise: nil)
                    // C2 may already be in the buffer.
                    let next: HandshakeAction
                    do { next = try handshake.feed(&buffer) } catch { throw RTMPConnectionError.handshake(error) }
                    guard next == .completed else { return }
                case .completed:
                    break
                }
                handshakeTimer?.cancel()
                handshakeTimer = nil
                for action in machine.handshakeCompleted() { perform(action) }
            }
            while machine.isOpen {
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

    func handle(_ message: RTMPMessage) throws(RTMPConnectionError) {
        if machine.isAwaitingAdmission {
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
