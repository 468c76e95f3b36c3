import NIOCore

/// One HTTP-FLV player on a raw TCP connection: sends `GET`, then parses the response with
/// ``HTTPFLVResponseParser`` and counts audio and video tags.
final class HTTPFLVViewerHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let stats: ViewerStats
    private let url: HTTPURL
    private var parser = HTTPFLVResponseParser()

    init(stats: ViewerStats, url: HTTPURL) {
        self.stats = stats
        self.url = url
    }

    func channelActive(context: ChannelHandlerContext) {
        let request = context.channel.allocator.buffer(string: self.url.request)
        context.writeAndFlush(Self.wrapOutboundOut(request), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = Self.unwrapInboundIn(data)
        let now = NIODeadline.now().uptimeNanoseconds
        self.stats.received(bytes: buffer.readableBytes)
        var arrivals = MediaArrivals()
        do {
            try buffer.withUnsafeReadableBytes { bytes in
                try self.parser.feed(bytes, into: &arrivals)
            }
        } catch {
            self.stats.fail("\(error)")
            context.close(promise: nil)
            return
        }
        self.stats.record(arrivals, at: now)
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
        self.stats.fail("\(error)")
        context.close(promise: nil)
    }
}

@available(*, unavailable)
extension HTTPFLVViewerHandler: Sendable {}
