import NIOCore
import NIOEmbedded
import Testing

@testable import RTMP

/// Records what passes the handshake handler.
final class InboundRecorder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    var events: [RTMPHandshakeCompleted] = []
    var reads: [ByteBuffer] = []

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let completed = event as? RTMPHandshakeCompleted {
            self.events.append(completed)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.reads.append(Self.unwrapInboundIn(data))
    }
}

struct HandshakeHandlerTests {
    @Test
    func serverHandlerAnswersFiresEventForwardsLeftoverAndRemovesItself() throws {
        let recorder = InboundRecorder()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ServerHandshakeHandler(handshake: ServerHandshake(random: SeededGenerator(seed: 1))))
        try channel.pipeline.syncOperations.addHandler(recorder)

        try channel.writeInbound(ByteBuffer([3] + HandshakeFixtures.plainC1(seed: 2)))
        let response = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(response.readableBytes == 3073)
        #expect(recorder.events.isEmpty)

        try channel.writeInbound(ByteBuffer(Wire.pattern(1536) + [0x03, 0x00]))
        #expect(recorder.events.count == 1)
        #expect(recorder.reads.map(\.bytes) == [[0x03, 0x00]])
        #expect(throws: (any Error).self) { try channel.pipeline.syncOperations.handler(type: ServerHandshakeHandler.self) }

        try channel.writeInbound(ByteBuffer([0x04]))
        #expect(recorder.reads.map(\.bytes) == [[0x03, 0x00], [0x04]])
        _ = try channel.finish()
    }

    @Test
    func serverHandlerFiresHandshakeErrors() throws {
        let channel = EmbeddedChannel(handler: ServerHandshakeHandler())
        #expect(throws: HandshakeError.unsupportedVersion(6)) { try channel.writeInbound(ByteBuffer([6, 0, 0])) }
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        _ = try? channel.finish()
    }

    @Test(arguments: [false, true])
    func clientAndServerHandlersHandshakeOverEmbeddedChannels(digest: Bool) throws {
        let serverRecorder = InboundRecorder()
        let clientRecorder = InboundRecorder()
        let server = EmbeddedChannel()
        try server.pipeline.syncOperations.addHandler(ServerHandshakeHandler(handshake: ServerHandshake(random: SeededGenerator(seed: 5))))
        try server.pipeline.syncOperations.addHandler(serverRecorder)
        let client = EmbeddedChannel()
        try client.pipeline.syncOperations.addHandler(
            ClientHandshakeHandler(handshake: ClientHandshake(random: SeededGenerator(seed: 6), digest: digest))
        )
        try client.pipeline.syncOperations.addHandler(clientRecorder)
        try client.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1935)).wait()

        for _ in 0..<4 {
            while let bytes = try client.readOutbound(as: ByteBuffer.self) {
                try server.writeInbound(bytes)
            }
            while let bytes = try server.readOutbound(as: ByteBuffer.self) {
                try client.writeInbound(bytes)
            }
        }
        #expect(serverRecorder.events.count == 1)
        #expect(clientRecorder.events.count == 1)
        _ = try client.finish()
        _ = try server.finish()
    }
}
