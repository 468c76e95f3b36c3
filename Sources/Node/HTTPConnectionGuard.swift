import HTTPTypes
import Logging
import Media
import Metrics
import NIOCore
import NIOHTTPTypes

/// The HTTP listener's bounds on one connection, in its pipeline just after HTTP decoding
/// (Hummingbird's `additionalChannelHandlers`):
///
/// - **Connection limits** (``ConnectionLimiter``): over the node's or the client address's
///   limit, the connection gets `503 Service Unavailable` with `Connection: close` and is
///   closed before any request is read.
/// - **Request headers in time**: a connection whose first request head is not complete
///   within `headerTimeout` is closed (slowloris: `GET /healthz HT…` and silence). Later
///   requests on a kept-alive connection are bounded by Hummingbird's idle timeout.
/// - **Write stall**: a connection whose socket takes nothing for `writeStallTimeout` (above
///   the high water mark the whole time) is closed. This is what drops an HTTP-FLV viewer
///   that never reads, and frees its queue and kernel send buffer.
///
/// - **A live stream's viewer gone**: the listener allows half-closed connections (a
///   client may send its request and shut its side), but a client that shuts its side
///   during an endless live response (HTTP-FLV) has left: the connection is closed, which
///   ends the response even while its stream sends nothing.
///
/// Each refusal is logged (at most once a second per cause), counted in
/// `estuary_http_connections_closed_total{reason}` and closes only this connection.
final class HTTPConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    struct Settings: Sendable {
        var headerTimeout: Duration = .seconds(10)
        var writeStallTimeout: Duration = .seconds(30)
        /// SO_SNDBUF for each connection (nil: the kernel's autotuning); see
        /// `RTMPServerConfiguration.socketSendBufferBytes`.
        var socketSendBufferBytes: Int? = 256 * 1024
    }

    private let settings: Settings
    private let limiter: ConnectionLimiter
    private let logger: Logger
    private var admittedAddress: String?
    private var refused = false
    private var sawRequest = false
    private var headerTimer: Scheduled<Void>?
    private var stallTimer: Scheduled<Void>?
    /// Whether the response being written is a live stream (`video/x-flv`), which only
    /// ends with its stream.
    private var streamingLive = false

    init(settings: Settings, limiter: ConnectionLimiter, logger: Logger) {
        self.settings = settings
        self.limiter = limiter
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let address = context.channel.remoteAddress?.ipAddress ?? "unknown"
        if let refusal = limiter.admit(address: address) {
            Self.closed(reason: refusal.rawValue)
            if let count = limiter.refusalToLog() {
                logger.warning("refusing HTTP connections: \(refusal.rawValue) (\(count) refused in the last second; last from \(address))")
            }
            // Answered once the channel is active; nothing it sends reaches the application.
            refused = true
            if context.channel.isActive { refuse(context: context) }
            return
        }
        admittedAddress = address
        if let bytes = settings.socketSendBufferBytes {
            try? context.channel.syncOptions?.setOption(.socketOption(.so_sndbuf), value: SocketOptionValue(clamping: bytes))
        }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        headerTimer = context.eventLoop.scheduleTask(in: .init(settings.headerTimeout)) {
            let (handler, context) = bound.value
            guard !handler.sawRequest else { return }
            handler.close(context: context, reason: "header_timeout", "no complete request head within \(handler.settings.headerTimeout)")
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        headerTimer?.cancel()
        stallTimer?.cancel()
        if let address = admittedAddress {
            admittedAddress = nil
            limiter.release(address: address)
        }
    }

    func channelActive(context: ChannelHandlerContext) {
        if refused { refuse(context: context) }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        if !sawRequest, case .head = unwrapInboundIn(data) {
            sawRequest = true
            headerTimer?.cancel()
            headerTimer = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            streamingLive = head.headerFields[.contentType] == "video/x-flv"
        case .end:
            streamingLive = false
        case .body:
            break
        }
        context.write(data, promise: promise)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed, streamingLive {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            stallTimer?.cancel()
            stallTimer = nil
        } else if stallTimer == nil {
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            stallTimer = context.eventLoop.scheduleTask(in: .init(settings.writeStallTimeout)) {
                let (handler, context) = bound.value
                handler.close(context: context, reason: "write_stalled", "the client read nothing for \(handler.settings.writeStallTimeout)")
            }
        }
        context.fireChannelWritabilityChanged()
    }

    private func close(context: ChannelHandlerContext, reason: String, _ why: String) {
        Self.closed(reason: reason)
        logger.notice("closing HTTP connection from \(admittedAddress ?? "?"): \(why)")
        context.close(promise: nil)
    }

    /// Answers 503 and closes, before any request is read.
    private func refuse(context: ChannelHandlerContext) {
        var head = HTTPResponse(status: .serviceUnavailable)
        head.headerFields[.connection] = "close"
        head.headerFields[.contentType] = "text/plain; charset=utf-8"
        head.headerFields[.retryAfter] = "5"
        let body = ByteBuffer(string: "too many connections\n")
        head.headerFields[.contentLength] = "\(body.readableBytes)"
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    static func closed(reason: String) {
        Counter(label: "estuary_http_connections_closed_total", dimensions: [("reason", reason)]).increment()
    }
}

@available(*, unavailable)
extension HTTPConnectionGuard: Sendable {}
