import NIOCore

/// Runs ``ClientHandshake`` at the front of a client pipeline.
///
/// Writes C0+C1 when the channel becomes active (or when added to an active channel), C2 after
/// S0+S1+S2, then fires ``RTMPHandshakeCompleted``, forwards any bytes that followed S2, and
/// removes itself. A ``HandshakeError`` is passed on with `fireErrorCaught`.
public final class ClientHandshakeHandler: ChannelInboundHandler, RemovableChannelHandler {
    /// Raw bytes from the socket.
    public typealias InboundIn = ByteBuffer
    /// Bytes that followed the handshake.
    public typealias InboundOut = ByteBuffer
    /// C0+C1 and C2.
    public typealias OutboundOut = ByteBuffer

    private enum State {
        case idle
        case handshaking
        case completed
        case failed
    }

    private var handshake: ClientHandshake
    private var state: State = .idle
    private var pending: ByteBuffer?

    /// Creates the handler.
    public init(handshake: ClientHandshake = ClientHandshake()) {
        self.handshake = handshake
    }

    /// Starts the handshake if the channel is already active.
    public func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive {
            self.start(context: context)
        }
    }

    /// Starts the handshake.
    public func channelActive(context: ChannelHandlerContext) {
        self.start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        guard case .idle = self.state else { return }
        self.state = .handshaking
        context.writeAndFlush(Self.wrapOutboundOut(self.handshake.start()), promise: nil)
    }

    /// Feeds bytes to the handshake.
    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.state {
        case .completed:
            context.fireChannelRead(data)
            return
        case .failed:
            return
        case .idle, .handshaking:
            break
        }
        var incoming = Self.unwrapInboundIn(data)
        var buffer: ByteBuffer
        if var pending = self.pending {
            self.pending = nil
            pending.writeBuffer(&incoming)
            buffer = pending
        } else {
            buffer = incoming
        }

        while true {
            let action: HandshakeAction
            do {
                action = try self.handshake.feed(&buffer)
            } catch {
                self.state = .failed
                context.fireErrorCaught(error)
                return
            }
            switch action {
            case .needMoreData:
                self.pending = buffer
                return
            case .send(let bytes):
                self.state = .handshaking
                context.writeAndFlush(Self.wrapOutboundOut(bytes), promise: nil)
            case .completed:
                self.state = .completed
                context.fireUserInboundEventTriggered(RTMPHandshakeCompleted())
                if buffer.readableBytes > 0 {
                    context.fireChannelRead(Self.wrapInboundOut(buffer))
                }
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
                return
            }
        }
    }
}

@available(*, unavailable)
extension ClientHandshakeHandler: Sendable {}
