import NIOCore

/// A `ByteToMessageDecoder` that turns the bytes after the handshake into ``RTMPMessage``s.
///
/// Wrap it in `ByteToMessageHandler`. Errors are ``ChunkError`` values delivered through
/// `errorCaught`; the connection cannot continue after one.
public final class ChunkDecoderHandler: ByteToMessageDecoder {
    /// Reassembled messages.
    public typealias InboundOut = RTMPMessage

    /// The underlying parser (exposes the current incoming ``ChunkDecoder/chunkSize``).
    public private(set) var decoder: ChunkDecoder

    /// Creates a handler.
    public init(limits: ChunkLimits = .init()) {
        self.decoder = ChunkDecoder(limits: limits)
    }

    /// Emits at most one message per call; `ByteToMessageHandler` calls again after `.continue`.
    public func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let message = try self.decoder.next(from: &buffer) else { return .needMoreData }
        context.fireChannelRead(Self.wrapInboundOut(message))
        return .continue
    }

    /// Decodes what is left at end of input; a partial trailing message is dropped.
    public func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        try self.decode(context: context, buffer: &buffer)
    }
}

@available(*, unavailable)
extension ChunkDecoderHandler: Sendable {}
