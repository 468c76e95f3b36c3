import AMF0
import Media
import NIOCore
import NIOEmbedded
import Testing

@testable import RTMP

/// What Estuary's own RTMP client (an edge's or a pull's upstream feed, a forward) says on
/// `connect`: as a player it takes every codec, so a server that negotiates sends it the
/// stream as published, not a rung in the codecs a legacy player decodes.
@Suite struct RTMPClientConnectTests {
    func connect(role: RTMPClientHandler.Role) throws -> ConnectCommand {
        let url = RTMPClientURL(host: "127.0.0.1", app: "live", streamName: "cam")
        let channel = EmbeddedChannel(handler: RTMPClientHandler(url: url, role: role) { _ in })
        channel.pipeline.fireUserInboundEventTriggered(RTMPHandshakeCompleted())
        var decoder = ChunkDecoder()
        var wire = channel.allocator.buffer(capacity: 512)
        while var written = try channel.readOutbound(as: ByteBuffer.self) { wire.writeBuffer(&written) }
        for _ in 0..<8 {
            guard let message = try decoder.next(from: &wire) else { break }
            if let command = try? CommandMessage(from: message), command.name == "connect" { return ConnectCommand(command) }
        }
        throw ConnectMissing()
    }

    struct ConnectMissing: Error {}

    @Test func aPlayerAnnouncesEveryCodecAndAPublisherNone() throws {
        let player = try connect(role: .play).codecs
        #expect(player.video.acceptsAny && player.audio.acceptsAny)
        #expect(player.decodes(video: .hevc, audio: .opus))
        #expect(try connect(role: .publish).codecs == .legacy)
    }
}
