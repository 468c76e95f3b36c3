import AMF0
import NIOCore
import NIOPosix
import RTMP

/// One video frame as the publisher sent it.
struct SentFrame: Sendable {
    /// Milliseconds on the stream timeline (the RTMP timestamp).
    var dts: Int64
    var pts: Int64
    var isKeyframe: Bool
    /// When the frame was handed to the socket (taken just before the write).
    var sentAt: ContinuousClock.Instant
}

struct PublishResult: Sendable {
    var startedAt: ContinuousClock.Instant
    var frames: [SentFrame]
    var tagsSent: Int
    /// How late the publisher was against its schedule, worst case, in milliseconds.
    var maxLatenessMilliseconds: Double
}

/// An RTMP publisher written with the RTMP module's handshake, chunk encoder and decoder:
/// handshake → Set Chunk Size 4096 → connect → createStream → publish, then every tag of
/// the source, paced in real time by its DTS (a frame with DTS d leaves at start + d).
struct Publisher: Sendable {
    let host: String
    let port: Int
    let app: String
    let streamName: String
    let source: FLVSource
    /// Publishing stops at the first tag at or past this many milliseconds (the file loops).
    let durationMilliseconds: Int64
    let group: any EventLoopGroup

    /// Connects and publishes. `onStart` runs once publishing is accepted, before the
    /// first tag, with the instant that is DTS 0.
    func run(onStart: @Sendable (ContinuousClock.Instant) -> Void) async throws -> PublishResult {
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(.seconds(5))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        // The set-up must finish within 10 s; a silent server closes the connection.
        let setupTimeout = channel.channel.eventLoop.scheduleTask(in: .seconds(10)) { channel.channel.close(promise: nil) }
        return try await channel.executeThenClose { inbound, outbound in
            var session = RTMPPublishSession(inbound: inbound.makeAsyncIterator(), outbound: outbound)
            try await session.handshake()
            let streamID = try await session.setUp(app: app, tcURL: "rtmp://\(host):\(port)/\(app)", streamName: streamName)
            setupTimeout.cancel()
            return try await session.publish(source: source, streamID: streamID, durationMilliseconds: durationMilliseconds, onStart: onStart)
        }
    }
}

/// The publisher's side of one connection.
private struct RTMPPublishSession {
    var inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    var pending = ByteBuffer()
    var decoder = ChunkDecoder()
    var encoder = ChunkEncoder()

    init(inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator, outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) {
        self.inbound = inbound
        self.outbound = outbound
    }

    private mutating func read() async throws {
        guard var bytes = try await inbound.next() else { throw BenchError.message("RTMP server closed the connection") }
        pending.writeBuffer(&bytes)
    }

    mutating func handshake() async throws {
        var machine = ClientHandshake()
        try await outbound.write(machine.start())
        // S0+S1+S2 are 3073 bytes; each round reads more or advances the machine.
        for _ in 0..<10_000 {
            switch try machine.feed(&pending) {
            case .needMoreData: try await read()
            case .send(let bytes): try await outbound.write(bytes)
            case .completed: return
            }
        }
        throw BenchError.message("RTMP handshake did not complete")
    }

    private mutating func nextMessage() async throws -> RTMPMessage {
        for _ in 0..<100_000 {
            if let message = try decoder.next(from: &pending) { return message }
            try await read()
        }
        throw BenchError.message("no RTMP message")
    }

    private mutating func send(_ message: RTMPMessage) async throws {
        var buffer = ByteBuffer()
        encoder.encode(message, into: &buffer)
        try await outbound.write(buffer)
    }

    /// Waits for the answer to a command; other messages (window size, bandwidth, stream
    /// begin) are skipped. Returns `_result` values or an `onStatus` info object.
    private mutating func awaitReply(transaction: Double, status: Bool) async throws -> [AMF0Value] {
        for _ in 0..<1000 {
            let message = try await nextMessage()
            guard message.typeID == MessageType.commandAMF0.rawValue || message.typeID == MessageType.commandAMF3.rawValue else { continue }
            switch try RTMPCommand(CommandMessage(from: message)) {
            case .result(let id, let values) where id == transaction && !status:
                return values
            case .error(_, let values):
                throw BenchError.message("RTMP _error: \(values)")
            case .onStatus(_, let info) where status:
                let code = info["code"]?.stringValue ?? "?"
                guard info["level"]?.stringValue != "error" else { throw BenchError.message("RTMP publish refused: \(code)") }
                return [info]
            default:
                continue
            }
        }
        throw BenchError.message("no reply to RTMP transaction \(transaction)")
    }

    mutating func setUp(app: String, tcURL: String, streamName: String) async throws -> UInt32 {
        try await send(SetChunkSize(chunkSize: UInt32(4096)).message())
        encoder.chunkSize = 4096
        let connect = CommandMessage(
            name: "connect", transactionID: 1,
            commandObject: .object([
                AMF0Property("app", .string(app)),
                AMF0Property("type", .string("nonprivate")),
                AMF0Property("flashVer", .string("FMLE/3.0 (compatible; hls-latency-bench)")),
                AMF0Property("tcUrl", .string(tcURL)),
            ])
        )
        try await send(connect.message())
        _ = try await awaitReply(transaction: 1, status: false)
        try await send(CommandMessage(name: "releaseStream", transactionID: 2, arguments: [.string(streamName)]).message())
        try await send(CommandMessage(name: "FCPublish", transactionID: 3, arguments: [.string(streamName)]).message())
        try await send(CommandMessage(name: "createStream", transactionID: 4).message())
        let values = try await awaitReply(transaction: 4, status: false)
        guard values.count > 1, let number = values[1].numberValue, number >= 0, number < 0x1_0000_0000 else {
            throw BenchError.message("createStream answered \(values)")
        }
        let streamID = UInt32(number)
        let publish = CommandMessage(name: "publish", transactionID: 5, arguments: [.string(streamName), .string("live")])
        try await send(publish.message(chunkStreamID: 8, streamID: streamID))
        // Bounded: awaitReply reads at most 1000 messages.
        for _ in 0..<10 {
            let info = try await awaitReply(transaction: 5, status: true)
            if info.first?["code"]?.stringValue == "NetStream.Publish.Start" { return streamID }
        }
        throw BenchError.message("no NetStream.Publish.Start")
    }

    mutating func publish(
        source: FLVSource,
        streamID: UInt32,
        durationMilliseconds: Int64,
        onStart: @Sendable (ContinuousClock.Instant) -> Void
    ) async throws -> PublishResult {
        let clock = ContinuousClock()
        let start = clock.now
        onStart(start)
        var frames: [SentFrame] = []
        frames.reserveCapacity(Int(durationMilliseconds / 30) + 64)
        var tagsSent = 0
        var maxLateness: Duration = .zero
        for (tag, timestamp, loop) in PublishTimeline(source: source, durationMilliseconds: durationMilliseconds) {
            // Configuration and metadata once; the looped timeline continues seamlessly.
            if loop > 0, tag.isSequenceHeader || tag.kind == .script { continue }
            let due = start + .milliseconds(timestamp)
            if due > clock.now {
                try await Task.sleep(until: due, tolerance: .microseconds(250), clock: clock)
            }
            let now = clock.now
            maxLateness = max(maxLateness, now - due)
            let message: RTMPMessage
            switch tag.kind {
            case .audio:
                message = RTMPMessage(type: .audio, streamID: streamID, timestamp: UInt32(timestamp), chunkStreamID: Self.audioChunkStream, payload: tag.body)
            case .video:
                message = RTMPMessage(type: .video, streamID: streamID, timestamp: UInt32(timestamp), chunkStreamID: Self.videoChunkStream, payload: tag.body)
                if tag.isCodedVideoFrame {
                    frames.append(SentFrame(dts: timestamp, pts: timestamp + tag.compositionTime, isKeyframe: tag.isKeyframe, sentAt: now))
                }
            case .script:
                var payload = ByteBuffer()
                AMF0Encoder().encode(.string(DataMessage.setDataFrame), into: &payload)
                var body = tag.body
                payload.writeBuffer(&body)
                message = RTMPMessage(type: .dataAMF0, streamID: streamID, timestamp: UInt32(timestamp), chunkStreamID: Self.dataChunkStream, payload: payload)
            }
            try await send(message)
            tagsSent += 1
        }
        // Unpublish cleanly, so the stream ends (EXT-X-ENDLIST) without the reconnect grace.
        try? await send(CommandMessage(name: "FCUnpublish", transactionID: 6, arguments: [.string("")]).message())
        try? await send(CommandMessage(name: "deleteStream", transactionID: 7, arguments: [.number(Double(streamID))]).message())
        return PublishResult(startedAt: start, frames: frames, tagsSent: tagsSent, maxLatenessMilliseconds: maxLateness.milliseconds)
    }

    private static let audioChunkStream: UInt32 = 6
    private static let videoChunkStream: UInt32 = 7
    private static let dataChunkStream: UInt32 = 5
}

extension Duration {
    var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }
}
