import AMF0
import Logging
import NIOCore
import NIOEmbedded
import Session

@testable import RTMP

/// One RTMP server connection on an `EmbeddedChannel`, driven as a client drives it: the
/// handshake, commands, media, a close; and what the server answered, decoded. Deterministic:
/// the admission must answer at once (`ImmediateSessionAdmission`), and time moves only when
/// the test advances it.
final class EmbeddedRTMPConnection {
    static let packetSize = 1536
    /// A plain C1: zero time and version, then a fixed pattern.
    static let c1: [UInt8] = (0..<packetSize).map { $0 < 8 ? 0 : UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }

    let loop = EmbeddedEventLoop()
    let channel: EmbeddedChannel
    private var encoder = ChunkEncoder()
    private var decoder = ChunkDecoder()
    private var stream = ByteBuffer()
    private var handshakeBytes: [UInt8] = []
    private var transaction = 1.0
    /// Every message the server sent, decoded, in order.
    private(set) var received: [RTMPMessage] = []
    /// The stream id `createStream` answered last.
    private(set) var streamID: UInt32 = 1

    init(admission: any SessionAdmission, configuration: RTMPServerConfiguration = RTMPServerConfiguration(), address: String = "192.0.2.7") throws {
        channel = EmbeddedChannel(loop: loop)
        let handler = RTMPServer.makeConnectionHandler(
            configuration: configuration, admission: admission, logger: Logger(label: "embedded-rtmp", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        let remote = try SocketAddress(ipAddress: address, port: 50_000)
        channel.remoteAddress = remote
        try channel.pipeline.syncOperations.addHandler(handler)
        channel.connect(to: remote, promise: nil)
    }

    var isOpen: Bool { channel.isActive }

    /// Runs what is due on the loop and reads what the server wrote.
    func settle() {
        loop.run()
        while let buffer = try? channel.readOutbound(as: ByteBuffer.self) {
            var buffer = buffer
            if handshakeBytes.count < 1 + 2 * Self.packetSize {
                let count = min(1 + 2 * Self.packetSize - handshakeBytes.count, buffer.readableBytes)
                handshakeBytes += buffer.readBytes(length: count) ?? []
            }
            stream.writeBuffer(&buffer)
            while let message = try? decoder.next(from: &stream) {
                received.append(message)
            }
            stream.discardReadBytes()
        }
    }

    func deliver(_ bytes: [UInt8]) {
        guard channel.isActive else { return }
        _ = try? channel.writeInbound(ByteBuffer(bytes: bytes))
        settle()
    }

    func deliver(_ message: RTMPMessage) {
        guard channel.isActive else { return }
        var buffer = ByteBuffer()
        encoder.encode(message, into: &buffer)
        _ = try? channel.writeInbound(buffer)
        settle()
    }

    /// C0+C1, then C2 (the echo of S1).
    func handshake() {
        deliver([3] + Self.c1)
        guard handshakeBytes.count >= 1 + Self.packetSize else { return }
        deliver(Array(handshakeBytes[1..<(1 + Self.packetSize)]))
    }

    func command(_ name: String, _ object: AMF0Value = .null, _ arguments: [AMF0Value] = [], streamID: UInt32 = 0) {
        transaction += 1
        deliver(CommandMessage(name: name, transactionID: transaction, commandObject: object, arguments: arguments)
            .message(chunkStreamID: streamID == 0 ? 3 : 8, streamID: streamID))
    }

    func connect(app: String = "live") {
        command("connect", .object([
            AMF0Property("app", .string(app)), AMF0Property("tcUrl", .string("rtmp://127.0.0.1/\(app)")),
            AMF0Property("flashVer", .string("FMLE/3.0")),
        ]))
    }

    func createStream() {
        command("createStream")
        if let result = commands.last(where: { $0.name == "_result" }), let id = result.arguments.first?.numberValue {
            streamID = UInt32(id)
        }
    }

    func publish(_ name: String) {
        command("publish", .null, [.string(name), .string("live")], streamID: streamID)
    }

    func play(_ name: String) {
        command("play", .null, [.string(name)], streamID: streamID)
    }

    func deleteStream() {
        command("deleteStream", .null, [.number(Double(streamID))])
    }

    /// A keyframe-less video frame (an AVC NAL unit) on the stream: media from a publisher.
    func sendVideo(timestamp: UInt32) {
        deliver(RTMPMessage(type: .video, streamID: streamID, timestamp: timestamp, chunkStreamID: 6, payload: ByteBuffer(bytes: [0x27, 0x01, 0, 0, 0, 0, 0, 0, 1, 0x41])))
    }

    /// The client goes away (its socket closes).
    func disconnect() {
        guard channel.isActive else { return }
        _ = try? channel.finish(acceptAlreadyClosed: true)
        settle()
    }

    func shutDown() {
        guard channel.isActive else { return }
        channel.pipeline.syncOperations.fireUserInboundEventTriggered(RTMPServerShutdown())
        settle()
    }

    func advance(_ duration: TimeAmount) {
        loop.advanceTime(by: duration)
        settle()
    }

    var commands: [CommandMessage] {
        received.compactMap { $0.typeID == MessageType.commandAMF0.rawValue ? try? CommandMessage(from: $0) : nil }
    }

    /// The `code` of every `onStatus` the server sent, in order.
    var statusCodes: [String] {
        commands.filter { $0.name == "onStatus" }.compactMap { command in
            command.arguments.first?.properties?.first(where: { $0.name == "code" })?.value.stringValue
        }
    }
}
