import AMF0
import NIOCore
import RTMP

/// One RTMP player: after ``ClientHandshakeHandler`` it sends `connect`, `createStream` and
/// `play`, then reassembles every message with the RTMP module's ``ChunkDecoder`` and counts
/// audio and video messages.
///
/// It answers only what a server may wait for: Acknowledgements once the announced window has
/// been received (nginx-rtmp announces 5000000 bytes) and Ping Requests.
final class RTMPViewerHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum State {
        case handshaking
        case connecting
        case creatingStream
        case starting(streamID: UInt32)
        case playing(streamID: UInt32)
    }

    private static let connectTransaction = 1.0
    private static let createStreamTransaction = 2.0
    private static let playTransaction = 3.0

    private let stats: ViewerStats
    private let url: RTMPURL
    private var state = State.handshaking
    private var decoder = ChunkDecoder()
    private let encoder = ChunkEncoder()
    /// Bytes of a chunk header split across reads; the decoder consumes payload bytes as they come.
    private var pending: ByteBuffer?
    private var windowSize: UInt64 = 0
    private var receivedBytes: UInt64 = 0
    private var acknowledgedBytes: UInt64 = 0

    init(stats: ViewerStats, url: RTMPURL) {
        self.stats = stats
        self.url = url
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is RTMPHandshakeCompleted else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        self.state = .connecting
        let connect = CommandMessage(
            name: "connect",
            transactionID: Self.connectTransaction,
            commandObject: .object([
                AMF0Property("app", .string(self.url.app)),
                AMF0Property("flashVer", .string("LNX 9,0,124,2")),
                AMF0Property("tcUrl", .string(self.url.tcURL)),
                AMF0Property("fpad", .boolean(false)),
                AMF0Property("capabilities", .number(15)),
                AMF0Property("audioCodecs", .number(4071)),
                AMF0Property("videoCodecs", .number(252)),
                AMF0Property("videoFunction", .number(1)),
            ])
        )
        self.send(connect.message(), context: context)
        context.flush()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = Self.unwrapInboundIn(data)
        let now = NIODeadline.now().uptimeNanoseconds
        let count = incoming.readableBytes
        self.stats.received(bytes: count)
        self.receivedBytes += UInt64(count)

        var buffer: ByteBuffer
        if var pending = self.pending {
            self.pending = nil
            pending.writeBuffer(&incoming)
            buffer = pending
        } else {
            buffer = incoming
        }

        var arrivals = MediaArrivals()
        var wrote = false
        do {
            // Each iteration consumes at least one header piece or payload byte, so the loop ends
            // when the read is used up.
            while let message = try self.decoder.next(from: &buffer) {
                if try self.handle(message, arrivals: &arrivals, context: context) { wrote = true }
            }
        } catch {
            self.fail("\(error)", context: context)
            return
        }
        if buffer.readableBytes > 0 { self.pending = buffer }
        self.stats.record(arrivals, at: now)

        if self.windowSize > 0, self.receivedBytes - self.acknowledgedBytes >= self.windowSize {
            self.acknowledgedBytes = self.receivedBytes
            let ack = Acknowledgement(sequenceNumber: UInt32(truncatingIfNeeded: self.receivedBytes))
            self.send(ack.message(), context: context)
            wrote = true
        }
        if wrote { context.flush() }
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.stats.closed(at: NIODeadline.now().uptimeNanoseconds)
        context.fireChannelInactive()
    }

    /// Also reached when the connect fails, where `channelInactive` never comes.
    func handlerRemoved(context: ChannelHandlerContext) {
        self.stats.closed(at: NIODeadline.now().uptimeNanoseconds)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.fail("\(error)", context: context)
    }

    /// Handles one message; returns true when it wrote an answer.
    private func handle(
        _ message: RTMPMessage,
        arrivals: inout MediaArrivals,
        context: ChannelHandlerContext
    ) throws -> Bool {
        switch message.typeID {
        case MessageType.audio.rawValue, MessageType.video.rawValue:
            let payload = message.payload
            let first = payload.getInteger(at: payload.readerIndex, as: UInt8.self) ?? 0
            let second = payload.getInteger(at: payload.readerIndex + 1, as: UInt8.self) ?? 0
            arrivals.record(typeID: message.typeID, length: payload.readableBytes, first: first, second: second)
            return false
        case MessageType.windowAcknowledgementSize.rawValue:
            self.windowSize = UInt64(try WindowAcknowledgementSize(from: message.payload).windowSize)
            return false
        case MessageType.userControl.rawValue:
            guard case .pingRequest(let timestamp) = try UserControl(from: message.payload) else { return false }
            self.send(UserControl.pingResponse(timestamp: timestamp).message(), context: context)
            return true
        case MessageType.commandAMF0.rawValue, MessageType.commandAMF3.rawValue:
            let command = try RTMPCommand(CommandMessage(from: message))
            return try self.handle(command, context: context)
        default:
            return false
        }
    }

    private func handle(_ command: RTMPCommand, context: ChannelHandlerContext) throws -> Bool {
        switch (self.state, command) {
        case (.connecting, .result(Self.connectTransaction, _)):
            self.state = .creatingStream
            let createStream = CommandMessage(name: "createStream", transactionID: Self.createStreamTransaction)
            self.send(createStream.message(), context: context)
            return true
        case (.creatingStream, .result(Self.createStreamTransaction, let values)):
            guard values.count > 1, let number = values[1].numberValue, number >= 0, number < 0x1_0000_0000 else {
                throw ViewerError.unexpectedReply("createStream _result \(values)")
            }
            let streamID = UInt32(number)
            self.state = .starting(streamID: streamID)
            // ffmpeg and librtmp announce a buffer length before play; servers may use it to size bursts.
            self.send(UserControl.setBufferLength(streamID: streamID, milliseconds: 3000).message(), context: context)
            let play = CommandMessage(
                name: "play",
                transactionID: Self.playTransaction,
                commandObject: .null,
                arguments: [.string(self.url.streamName), .number(-2)]
            )
            self.send(play.message(chunkStreamID: 8, streamID: streamID), context: context)
            return true
        case (.starting(let streamID), .onStatus(_, let info)):
            let code = info["code"]?.stringValue ?? "?"
            if info["level"]?.stringValue == "error" || code.hasSuffix("StreamNotFound") || code.hasSuffix("Failed") {
                throw ViewerError.unexpectedReply(code)
            }
            if code == "NetStream.Play.Start" { self.state = .playing(streamID: streamID) }
            return false
        case (_, .error(_, let values)):
            let code = values.dropFirst().first?["code"]?.stringValue ?? "\(values)"
            throw ViewerError.unexpectedReply("_error \(code)")
        default:
            return false
        }
    }

    private func send(_ message: RTMPMessage, context: ChannelHandlerContext) {
        let bytes = self.encoder.encode(message, allocator: context.channel.allocator)
        context.write(Self.wrapOutboundOut(bytes), promise: nil)
    }

    private func fail(_ reason: String, context: ChannelHandlerContext) {
        self.stats.fail(reason)
        context.close(promise: nil)
    }
}

@available(*, unavailable)
extension RTMPViewerHandler: Sendable {}

/// A reply a viewer cannot continue after.
enum ViewerError: Error, Equatable, CustomStringConvertible {
    case unexpectedReply(String)

    var description: String {
        switch self {
        case .unexpectedReply(let text): return "unexpected reply: \(text)"
        }
    }
}
