import AMF0
import Media
import NIOCore

/// The client side of an RTMP session, after `ClientHandshakeHandler`: `connect`,
/// `createStream`, then `play` or `publish` of one stream, as ffmpeg does. An edge pulls
/// with it (play); forwarding pushes with it (publish).
///
/// Playing, it reassembles the server's messages with `ChunkDecoder` (bounded as on the
/// server side) and reports audio, video and `onMetaData` as classified `MediaFrame`s.
/// Publishing, it takes `MediaFrame`s written to the channel (`channel.write(frame)`)
/// once `started` was reported, and sends them on chunk streams 4 (audio), 6 (video) and
/// 5 (metadata, as `@setDataFrame`), in 4096-byte chunks. Acknowledgements and ping
/// responses are answered. Events go to `onEvent` on the channel's event loop
/// (`RTMPClientEvent`).
public final class RTMPClientHandler: ChannelDuplexHandler {
    public typealias InboundIn = ByteBuffer
    public typealias OutboundIn = MediaFrame
    public typealias OutboundOut = ByteBuffer

    public enum Role: Sendable, Equatable {
        case play
        case publish
    }

    private enum State {
        case handshaking
        case connecting
        case creatingStream
        case starting(streamID: UInt32)
        case started(streamID: UInt32)
        case finished
    }

    private static let connectTransaction = 1.0
    private static let createStreamTransaction = 2.0
    private static let startTransaction = 3.0
    static let chunkSize = 4096

    private let url: RTMPClientURL
    private let role: Role
    /// Advertises Enhanced RTMP v2's reconnect capability (`capsEx`) and reports requests.
    private let acceptsReconnectRequests: Bool
    private let onEvent: @Sendable (RTMPClientEvent) -> Void
    private var state = State.handshaking
    private var decoder: ChunkDecoder
    private var encoder = ChunkEncoder()
    private var pending: ByteBuffer?
    private var windowSize: UInt64 = 0
    private var receivedBytes: UInt64 = 0
    private var acknowledgedBytes: UInt64 = 0
    /// Frames decoded from the current read, reported together at its end: a consumer
    /// (an edge's hub) wakes its viewers once per read, as a server does per publisher read.
    private var received: [MediaFrame] = []

    public init(url: RTMPClientURL, role: Role, limits: ChunkLimits = .init(), acceptsReconnectRequests: Bool = false, onEvent: @escaping @Sendable (RTMPClientEvent) -> Void) {
        self.url = url
        self.role = role
        self.acceptsReconnectRequests = acceptsReconnectRequests
        self.decoder = ChunkDecoder(limits: limits)
        self.onEvent = onEvent
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is RTMPHandshakeCompleted else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        state = .connecting
        send(SetChunkSize(chunkSize: UInt32(Self.chunkSize)).message(), context: context)
        encoder.chunkSize = Self.chunkSize
        var properties = [
            AMF0Property("app", .string(url.app)),
            AMF0Property("type", .string("nonprivate")),
            AMF0Property("flashVer", .string(role == .publish ? "FMLE/3.0 (compatible; Estuary)" : "LNX 9,0,124,2")),
            AMF0Property("tcUrl", .string(url.tcURL)),
        ]
        if acceptsReconnectRequests {
            properties.append(AMF0Property("capsEx", .number(Double(ConnectCommand.reconnectCapability))))
        }
        if role == .play {
            // An edge or a pull carries every codec as it is (a hub holds any): a server
            // that negotiates must send the stream itself, not a rung in codecs a legacy
            // player decodes.
            properties.append(AMF0Property("fourCcList", .strictArray([.string("*")])))
        }
        let connect = CommandMessage(name: "connect", transactionID: Self.connectTransaction, commandObject: .object(properties))
        send(connect.message(), context: context)
        context.flush()
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        receivedBytes += UInt64(incoming.readableBytes)
        var buffer: ByteBuffer
        if var pending {
            self.pending = nil
            pending.writeBuffer(&incoming)
            buffer = pending
        } else {
            buffer = incoming
        }
        var wrote = false
        do {
            while let message = try decoder.next(from: &buffer) {
                if try handle(message, context: context) { wrote = true }
                if case .finished = state { return }
            }
        } catch {
            finish(.ended(reason: "protocol error: \(error)", clean: false), context: context)
            return
        }
        reportFrames()
        if buffer.readableBytes > 0 { pending = buffer }
        if windowSize > 0, receivedBytes - acknowledgedBytes >= windowSize {
            acknowledgedBytes = receivedBytes
            send(Acknowledgement(sequenceNumber: UInt32(truncatingIfNeeded: receivedBytes)).message(), context: context)
            wrote = true
        }
        if wrote { context.flush() }
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = unwrapOutboundIn(data)
        guard role == .publish, case .started(let streamID) = state else {
            promise?.succeed()
            return
        }
        var payload = frame.payload
        let chunkStreamID: UInt32
        switch frame.kind {
        case .audio: chunkStreamID = 4
        case .video: chunkStreamID = 6
        case .script:
            chunkStreamID = 5
            // A publisher's metadata is `@setDataFrame` + `onMetaData` + the array.
            var body = context.channel.allocator.buffer(capacity: payload.readableBytes + 16)
            AMF0Encoder().encode([.string("@setDataFrame")], into: &body)
            body.writeBuffer(&payload)
            payload = body
        }
        let message = RTMPMessage(
            typeID: frame.kind.rawValue, streamID: streamID, timestamp: UInt32(truncatingIfNeeded: frame.timestamp),
            chunkStreamID: chunkStreamID, payload: payload
        )
        context.write(wrapOutboundOut(encoder.encode(message, allocator: context.channel.allocator)), promise: promise)
    }

    public func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { onEvent(.writable) }
        context.fireChannelWritabilityChanged()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        finish(.ended(reason: "the server closed the connection", clean: false), context: context)
        context.fireChannelInactive()
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.ended(reason: "\(error)", clean: false), context: context)
    }

    /// Handles one message; returns true when it wrote an answer.
    private func handle(_ message: RTMPMessage, context: ChannelHandlerContext) throws -> Bool {
        switch message.type {
        case .audio, .video:
            guard role == .play, case .started = state, let kind = MediaKind(rawValue: message.typeID) else { return false }
            // A frame that does not parse is skipped, as a player would; the stream goes on.
            if let frame = try? MediaFrame.classified(kind: kind, timestamp: Int64(message.timestamp), payload: message.payload) {
                received.append(frame)
            }
            return false
        case .dataAMF0:
            guard role == .play, case .started = state, let frame = Self.metadata(message.payload, timestamp: Int64(message.timestamp)) else { return false }
            received.append(frame)
            return false
        case .setChunkSize:
            // Read by the decoder itself.
            return false
        case .windowAcknowledgementSize:
            windowSize = UInt64(try WindowAcknowledgementSize(from: message.payload).windowSize)
            return false
        case .userControl:
            guard case .pingRequest(let timestamp) = try UserControl(from: message.payload) else { return false }
            send(UserControl.pingResponse(timestamp: timestamp).message(), context: context)
            return true
        case .commandAMF0, .commandAMF3:
            return try handle(RTMPCommand(CommandMessage(from: message)), context: context)
        default:
            return false
        }
    }

    private func handle(_ command: RTMPCommand, context: ChannelHandlerContext) throws -> Bool {
        switch (state, command) {
        case (.connecting, .result(Self.connectTransaction, _)):
            state = .creatingStream
            send(CommandMessage(name: "createStream", transactionID: Self.createStreamTransaction).message(), context: context)
            return true
        case (.creatingStream, .result(Self.createStreamTransaction, let values)):
            guard values.count > 1, let number = values[1].numberValue, number >= 0, number < 0x1_0000_0000 else {
                finish(.refused("createStream answered \(values)"), context: context)
                return false
            }
            let streamID = UInt32(number)
            state = .starting(streamID: streamID)
            let start: CommandMessage
            switch role {
            case .play:
                send(UserControl.setBufferLength(streamID: streamID, milliseconds: 1000).message(), context: context)
                start = CommandMessage(name: "play", transactionID: Self.startTransaction, commandObject: .null, arguments: [.string(url.streamName), .number(-2)])
            case .publish:
                start = CommandMessage(name: "publish", transactionID: Self.startTransaction, commandObject: .null, arguments: [.string(url.streamName), .string("live")])
            }
            send(start.message(chunkStreamID: 8, streamID: streamID), context: context)
            return true
        case (_, .onStatus(_, let info)):
            let code = info["code"]?.stringValue ?? "?"
            if code == StatusCode.connectReconnectRequest.rawValue {
                if acceptsReconnectRequests, case .started = state {
                    onEvent(.reconnectRequested(tcUrl: info["tcUrl"]?.stringValue))
                }
                return false
            }
            if case .starting(let streamID) = state {
                if code == StatusCode.playStart.rawValue || code == StatusCode.publishStart.rawValue {
                    state = .started(streamID: streamID)
                    onEvent(.started)
                } else if info["level"]?.stringValue == "error" {
                    finish(.refused(code), context: context)
                }
            } else if case .started = state, code == StatusCode.playUnpublishNotify.rawValue || code == StatusCode.playStop.rawValue
                || info["level"]?.stringValue == "error" {
                finish(.ended(reason: code, clean: info["level"]?.stringValue != "error"), context: context)
            }
            return false
        case (_, .error(_, let values)):
            let code = values.dropFirst().first?["code"]?.stringValue ?? "_error"
            if case .started = state {
                finish(.ended(reason: code, clean: false), context: context)
            } else {
                finish(.refused(code), context: context)
            }
            return false
        default:
            return false
        }
    }

    /// `onMetaData` (with or without a leading `@setDataFrame`) as a script frame; nil for
    /// any other data message (`|RtmpSampleAccess`).
    static func metadata(_ payload: ByteBuffer, timestamp: Int64) -> MediaFrame? {
        var body = payload
        guard let first = try? AMF0Decoder().decode(from: &body) else { return nil }
        if first.stringValue == "@setDataFrame" {
            let rest = body
            var probe = rest
            guard (try? AMF0Decoder().decode(from: &probe))?.stringValue == "onMetaData" else { return nil }
            return MediaFrame(kind: .script, timestamp: timestamp, payload: rest)
        }
        guard first.stringValue == "onMetaData" else { return nil }
        return MediaFrame(kind: .script, timestamp: timestamp, payload: payload)
    }

    private func send(_ message: RTMPMessage, context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(encoder.encode(message, allocator: context.channel.allocator)), promise: nil)
    }

    private func reportFrames() {
        guard !received.isEmpty else { return }
        let frames = received
        received = []
        onEvent(.frames(frames))
    }

    private func finish(_ event: RTMPClientEvent, context: ChannelHandlerContext) {
        if case .finished = state { return }
        // Frames of the read that ended the session come before its end.
        reportFrames()
        state = .finished
        switch event {
        case .refused(let code):
            onEvent(.refused(code))
            onEvent(.ended(reason: code, clean: false))
        default:
            onEvent(event)
        }
        context.close(promise: nil)
    }
}

@available(*, unavailable)
extension RTMPClientHandler: Sendable {}
