import NIOCore

/// Runs ``ServerHandshake`` at the front of a server pipeline.
///
/// Writes S0+S1+S2, and when C2 has arrived fires ``RTMPHandshakeCompleted`` as a user inbound
/// event, forwards any bytes that followed C2 with `fireChannelRead`, and removes itself. A
/// ``HandshakeError`` is passed on with `fireErrorCaught` (the session handler logs, counts and
/// closes); bytes after an error are dropped.
public final class ServerHandshakeHandler: ChannelInboundHandler, RemovableChannelHandler {
    /// Raw bytes from the socket.
    public typealias InboundIn = ByteBuffer
    /// Bytes that followed the handshake.
    public typealias InboundOut = ByteBuffer
    /// S0+S1+S2.
    public typealias OutboundOut = ByteBuffer

    private enum State {
        case handshaking
        case completed
        case failed
    }

    private var handshake: ServerHandshake
    private var state: State = .handshaking
    private var pending: ByteBuffer?

    /// Creates the handler.
    public init(handshake: ServerHandshake = ServerHandshake()) {
        self.handshake = handshake
    }

    /// Feeds bytes to the handshake.
    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.state {
        case .completed:
            // Reads already queued before the removal took effect.
            context.fireChannelRead(data)
            return
        case .failed:
            return
        case .handshaking:
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
extension ServerHandshakeHandler: Sendable {}
