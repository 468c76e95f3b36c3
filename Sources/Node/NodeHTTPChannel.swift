import Hummingbird
import HummingbirdCore
import Logging
import Media
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import Relay

/// A node's HTTP/1 connection: Hummingbird's `HTTP1Channel` pipeline, plus the
/// `HTTPFLVViewerHandler` that writes live HTTP-FLV bodies from the channel.
///
/// The viewer handler sits after Hummingbird's connection state handler, so that handler
/// counts a live response as in progress (it never sees the response end) and its idle
/// timeout never closes a viewer; and before the async channel, so it sees the response
/// parts Hummingbird writes. `additionalChannelHandlers` cannot place a handler there.
struct NodeHTTPChannel: ServerChildChannel, HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let responder: HTTPChannelHandler.Responder
    /// The handlers after HTTP decoding (the connection guard), made per connection.
    let connectionHandlers: @Sendable () -> [any RemovableChannelHandler]
    let idleTimeout: Duration?
    /// HTTPS: the certificate each new connection takes (`TLSCertificates`); nil for HTTP.
    var tls: TLSCertificates? = nil

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            // Hummingbird's defaults (`HTTP1Channel.Configuration.DecoderConfiguration`).
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderFieldSize = 80 * 1024
            limits.maxHeaderListSize = 80 * 1024
            limits.maxHeaderFieldCount = 1000
            let pipeline = channel.pipeline.syncOperations
            try tls?.addServerHandlers(to: pipeline, listener: "https")
            // Before the first read, or the pool keeps the default 2 KiB buffer.
            try channel.syncOptions?.setOption(.recvAllocator, value: ReceiveBuffers.http)
            try pipeline.configureHTTPServerPipeline(
                withPipeliningAssistance: false,
                withErrorHandling: false,
                withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init(),
                withDecoderLimitConfiguration: limits
            )
            try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: tls != nil))
            try pipeline.addHandlers(connectionHandlers())
            try pipeline.addHandler(HTTPConnectionStateHandler(idleTimeout: idleTimeout, logger: logger))
            try pipeline.addHandler(HTTPFLVViewerHandler())
            return try NIOAsyncChannel(wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
        }
    }

    func handle(value asyncChannel: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: asyncChannel, logger: logger)
    }
}
