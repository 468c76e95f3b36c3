import NIOCore

/// Runs a handshake state machine at the front of a pipeline.
///
/// Writes what the machine sends (C0+C1 on activation for a client; S0+S1+S2 or C2 in
/// reply), then fires ``RTMPHandshakeCompleted`` as a user inbound event, forwards any bytes
/// that followed the handshake with `fireChannelRead`, and removes itself. A
/// ``HandshakeError`` is passed on with `fireErrorCaught` (the session handler logs, counts
/// and closes); bytes after an error are dropped.
///
/// Estuary's own server drives ``ServerHandshake`` inside its connection handler (one
/// handler per connection); this handler serves clients (the load generator, pull/push)
/// and pipelines that prefer a separate stage.
public final class HandshakeHandler<Machine: HandshakeStateMachine>: ChannelInboundHandler, RemovableChannelHandler {
    /// Raw bytes from the socket.
    public typealias InboundIn = ByteBuffer
    /// Bytes that followed the handshake.
    public typealias InboundOut = ByteBuffer
    /// Handshake packets.
    public typealias OutboundOut = ByteBuffer

    private enum State {
        case idle
        case handshaking
        case completed
        case failed
    }

    private var handshake: Machine
    private var state: State = .idle
    private var pending: ByteBuffer?

    /// Creates the handler.
    public init(handshake: Machine) {
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
        if let opening = self.handshake.opening() {
            context.writeAndFlush(Self.wrapOutboundOut(opening), promise: nil)
        }
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
extension HandshakeHandler: Sendable {}

/// The server side: waits for C0+C1.
public typealias ServerHandshakeHandler = HandshakeHandler<ServerHandshake>
/// The client side: sends C0+C1 when the channel becomes active.
public typealias ClientHandshakeHandler = HandshakeHandler<ClientHandshake>

extension HandshakeHandler where Machine == ServerHandshake {
    /// A server handshake with system randomness.
    public convenience init() { self.init(handshake: ServerHandshake()) }
}

extension HandshakeHandler where Machine == ClientHandshake {
    /// A plain client handshake with system randomness.
    public convenience init() { self.init(handshake: ClientHandshake()) }
}
