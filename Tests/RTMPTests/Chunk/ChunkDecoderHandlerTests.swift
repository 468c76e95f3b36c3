import NIOCore
import NIOEmbedded
import NIOTestUtils
import Testing

@testable import RTMP

struct ChunkDecoderHandlerTests {
    @Test
    func handlerPassesByteToMessageDecoderVerifier() throws {
        // Self-contained rows only: the verifier shuffles rows through one decoder, so rows must
        // not change the chunk size or depend on another row's chunk stream state.
        let rows = ChunkVector.all.filter { $0.finalChunkSize == 128 && !$0.name.contains("abort") && !$0.name.hasPrefix("librtmp") }
        let pairs = rows.map { (ByteBuffer($0.bytes), $0.messages) }
        try ByteToMessageDecoderVerifier.verifyDecoder(inputOutputPairs: pairs) { ChunkDecoderHandler() }
    }

    @Test
    func handlerSurfacesChunkErrors() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(ChunkDecoderHandler()))
        #expect(throws: ChunkError.unknownChunkStream(7)) {
            try channel.writeInbound(ByteBuffer([0xC7, 0x00]))
        }
        _ = try? channel.finish()
    }
}
