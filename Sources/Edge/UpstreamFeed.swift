import AsyncHTTPClient
import Media
import NIOCore

/// One upstream connection that delivers a stream's frames (HTTP-FLV or RTMP), opened by
/// `EdgeStreamSource` once the upstream said it has the stream.
protocol UpstreamFeed: Sendable {
    /// Delivers the stream's frames, in order and with the upstream's timestamps, until the
    /// upstream ends the stream (returns) or the connection fails (throws). Cancelling the
    /// calling task closes the connection.
    func run(_ deliver: @escaping @Sendable ([MediaFrame]) -> Void) async throws
}

/// An HTTP-FLV response body, read tag by tag (`FLVTagReader`, bounded by `maxTagBytes`).
struct HTTPFLVFeed: UpstreamFeed {
    let response: HTTPClientResponse
    let maxTagBytes: Int

    func run(_ deliver: @escaping @Sendable ([MediaFrame]) -> Void) async throws {
        var reader = FLVTagReader(maxTagSize: maxTagBytes)
        var buffer = ByteBuffer()
        for try await chunk in response.body {
            var chunk = chunk
            buffer.writeBuffer(&chunk)
            var frames: [MediaFrame] = []
            while let tag = try reader.nextTag(from: &buffer) {
                frames.append(try tag.mediaFrame())
            }
            if buffer.readerIndex > 64 << 10 { buffer.discardReadBytes() }
            if !frames.isEmpty { deliver(frames) }
        }
    }
}
