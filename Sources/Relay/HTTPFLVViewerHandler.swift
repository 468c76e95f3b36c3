import HTTPTypes
import Logging
import Media
import Metrics
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import Session

/// A viewer the HTTP-FLV route has admitted, on its way to the connection's
/// `HTTPFLVViewerHandler`.
///
/// A class, so that the handler's state holds it by one reference: a wake-up reads the
/// state, and copying these fields would be a retain and a release each, per viewer per burst.
public final class HTTPFLVViewer: Sendable {
    let hub: StreamHub
    /// The viewer's session: the handler ends it as the viewer goes.
    let session: PlaySession
    /// The FLV file header and PreviousTagSize0, as one chunk.
    let preamble: ByteBuffer
    let logger: Logger

    init(hub: StreamHub, session: PlaySession, preamble: ByteBuffer, logger: Logger) {
        self.hub = hub
        self.session = session
        self.preamble = preamble
        self.logger = logger
    }
}

/// Writes an HTTP-FLV viewer's response body from the channel, the way an RTMP viewer is
/// written: no task, no async sequence, no HTTP encoder per tag.
///
/// Hummingbird parses the request and the route admits it (or answers the error). An
/// admitted viewer is handed here (`arm`), and this handler, between Hummingbird's
/// connection state handler and its async channel:
/// - lets the response head through (the HTTP encoder writes it, chunked);
/// - takes the body over: it subscribes to the hub and, on each wake, writes the hub's
///   shared `httpFLVChunk` buffers (every tag framed once per stream as one chunk) from the
///   HTTP encoder's own context, which sends them to the socket as they are: one `writev`
///   of shared buffers per viewer per wake, as for RTMP (`ViewerBacklog` for the slices);
/// - lets Hummingbird's connection task go: the route's body throws `HandedOver`, and the
///   task, on its way out, finishes its writer and closes the channel; this handler
///   swallows that half-close and that close (and anything written after the head), so the
///   task and its stack (≈ 17 KiB of task-allocator slabs per viewer, docs/benchmarks.md)
///   are freed while the connection stays;
/// - keeps reading (the async channel stops asking once its task is gone) and drops what it
///   reads, so a viewer that leaves is noticed (`HTTPConnectionGuard` closes on its EOF);
/// - when the stream ends, writes the last chunk and closes the connection.
public final class HTTPFLVViewerHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = HTTPRequestPart
    public typealias InboundOut = HTTPRequestPart
    public typealias OutboundIn = HTTPResponsePart
    public typealias OutboundOut = HTTPResponsePart

    private enum State {
        /// Requests pass through.
        case idle
        /// The route admitted `viewer`; its response head is on its way.
        case armed(HTTPFLVViewer)
        /// The body is this handler's.
        case streaming(HTTPFLVViewer, HubSubscriber)
        /// The stream ended or the connection closed.
        case finished
    }

    private var state = State.idle
    /// Hummingbird's task will let go of this connection: its one close is swallowed.
    private var awaitingTaskClose = false
    private var backlog = ViewerBacklog()
    /// The HTTP encoder's context: a write from it goes to the socket unencoded.
    private var wire: ChannelHandlerContext?
    /// The channel's writability as its last change said (read once per wake-up).
    private var channelWritable = true

    public init() {}

    /// Hands an admitted viewer to `channel`'s handler, before the route returns its
    /// response. False if the connection is gone, or its pipeline has no such handler.
    public static func arm(_ viewer: HTTPFLVViewer, on channel: any Channel) async -> Bool {
        let armed = channel.eventLoop.submit { () -> Bool in
            guard channel.isActive, let handler = try? channel.pipeline.syncOperations.handler(type: HTTPFLVViewerHandler.self) else { return false }
            return handler.arm(viewer)
        }
        return (try? await armed.get()) ?? false
    }

    private func arm(_ viewer: HTTPFLVViewer) -> Bool {
        guard case .idle = state else { return false }
        state = .armed(viewer)
        awaitingTaskClose = true
        return true
    }

    // MARK: Outbound: the response

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch state {
        case .idle:
            context.write(data, promise: promise)
        case .armed(let viewer):
            guard case .head = unwrapOutboundIn(data) else {
                context.write(data, promise: promise)
                return
            }
            context.write(data, promise: promise)
            start(viewer, context: context)
        case .streaming, .finished:
            // The route's empty body ends here: the body is written below the encoder.
            promise?.succeed(())
        }
    }

    /// What a route's body throws once its viewer is handed over: it ends Hummingbird's
    /// connection task (which closes the channel on its way out: see `close`).
    public struct HandedOver: Error {
        public init() {}
    }

    public func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        switch state {
        case .armed, .streaming:
            if mode == .output {
                // The task's writer finishing: the body is still being written.
                promise?.succeed(())
                return
            }
            if awaitingTaskClose {
                // The task leaving (see `HandedOver`): the connection is this handler's.
                awaitingTaskClose = false
                promise?.succeed(())
                return
            }
        case .idle, .finished:
            break
        }
        context.close(mode: mode, promise: promise)
    }

    private func start(_ viewer: HTTPFLVViewer, context: ChannelHandlerContext) {
        guard let wire = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self) else {
            viewer.logger.error("HTTP-FLV viewer of \(viewer.session.path): no HTTP encoder in the pipeline")
            state = .finished
            viewer.session.end(.failed("no HTTP encoder in the pipeline"))
            context.close(promise: nil)
            return
        }
        self.wire = wire
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let subscriber = HubSubscriber(format: .httpFLVChunk, maxQueueBytes: viewer.hub.configuration.subscriberQueueBytes, eventLoop: context.eventLoop) { _ in
            let (handler, context) = bound.value  // on this connection's loop
            handler.drain(context: context)
        }
        state = .streaming(viewer, subscriber)
        RelayMetrics.flvViewers.increment()
        wire.write(NIOAny(viewer.preamble), promise: nil)
        context.read()  // see `channelReadComplete`
        if !viewer.hub.subscribe(subscriber) {
            finish(context: context)
        }
    }

    private func drain(context: ChannelHandlerContext) {
        // Not `context.channel.isActive`: a closed channel's `channelInactive` stops streaming.
        guard case .streaming(let viewer, let subscriber) = state, let wire else { return }
        let traffic = viewer.session.traffic
        guard channelWritable else { return }  // resumed by channelWritabilityChanged
        let outcome = backlog.pump(from: subscriber, eventLoop: context.eventLoop) { unit, promise in
            switch unit {
            case .bytes(let bytes):
                traffic?.sent(bytes.readableBytes)
                wire.write(NIOAny(bytes), promise: promise)
            case .packet(let packet):
                // A hub built without the shared format (none in a node) is framed per viewer.
                let bytes = packet.bytes(for: .httpFLVChunk) ?? HTTPFLVChunkSerializer().serialize(packet.frame, allocator: context.channel.allocator)
                traffic?.sent(bytes.readableBytes)
                wire.write(NIOAny(bytes), promise: promise)
            }
        }
        switch outcome {
        case .sliceInFlight(let written):
            wire.flush()
            // As for RTMP viewers: while writable, the next slice at once, so a socket that
            // stopped taking data fills the channel and its write-stall timeout starts.
            if channelWritable { return drain(context: context) }
            written.assumeIsolated().whenComplete { _ in
                self.drain(context: context)
            }
            return
        case .ended:
            finish(context: context)
            return
        case .idle:
            break
        }
        wire.flush()
    }

    /// Ends the response on `channel` as if its stream had ended (an operator's kick): the
    /// last chunk, then the close. From any thread.
    public static func endStream(on channel: any Channel) {
        channel.eventLoop.execute {
            guard let handler = try? channel.pipeline.syncOperations.handler(type: HTTPFLVViewerHandler.self),
                  let context = try? channel.pipeline.syncOperations.context(handlerType: HTTPFLVViewerHandler.self)
            else {
                channel.close(promise: nil)
                return
            }
            switch handler.state {
            case .streaming:
                handler.finish(context: context)
            case .armed:
                handler.stop(.left)
                context.close(promise: nil)
            case .idle, .finished:
                break
            }
        }
    }

    /// The stream ended: the last chunk, and the connection closes once it is written.
    private func finish(context: ChannelHandlerContext) {
        guard let wire else { return }
        stop(.streamEnded)
        var end = context.channel.allocator.buffer(capacity: 5)
        end.writeStaticString(HTTPChunk.end)
        wire.writeAndFlush(NIOAny(end)).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    /// Leaves the hub and ends the viewer's session (with `reason`, unless a kick said why
    /// first); idempotent.
    private func stop(_ reason: SessionEndReason) {
        switch state {
        case .idle, .finished:
            break
        case .armed(let viewer):
            state = .finished
            viewer.session.end(reason)
        case .streaming(let viewer, let subscriber):
            state = .finished
            viewer.hub.unsubscribe(subscriber)
            RelayMetrics.flvViewers.decrement()
            let statistics = subscriber.statistics
            if statistics.skips > 0 {
                viewer.logger.info("HTTP-FLV viewer of \(viewer.session.path) left after \(statistics.skips) queue overflows (\(statistics.droppedFrames) frames skipped)")
            }
            viewer.session.end(reason)
        }
        backlog = ViewerBacklog()
    }

    // MARK: Inbound

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch state {
        case .idle, .armed:
            context.fireChannelRead(data)
        case .streaming, .finished:
            // Nothing a client sends during an endless response is answered.
            break
        }
    }

    public func channelReadComplete(context: ChannelHandlerContext) {
        if case .streaming = state {
            // Once Hummingbird's task has gone, its async channel asks for no more reads:
            // this handler asks, so that a viewer's EOF (or reset) is seen while its stream
            // sends nothing.
            context.read()
            return
        }
        context.fireChannelReadComplete()
    }

    public func channelWritabilityChanged(context: ChannelHandlerContext) {
        channelWritable = context.channel.isWritable
        if channelWritable { drain(context: context) }
        context.fireChannelWritabilityChanged()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        stop(.left)
        context.fireChannelInactive()
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        stop(.left)
        wire = nil
    }
}

@available(*, unavailable)
extension HTTPFLVViewerHandler: Sendable {}
