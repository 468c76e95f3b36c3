import Metrics
import NIOCore
import NIOSSL
import NIOTLS

/// Counts TLS handshakes by listener and outcome (`estuary_tls_handshakes_total{listener,
/// result}`), after the TLS handler: a completed one is its user event, a failed one its
/// error (which closes the connection).
final class TLSHandshakeCounter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let listener: String
    private var completed = false

    init(listener: String) {
        self.listener = listener
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event, !completed {
            completed = true
            Counter(label: "estuary_tls_handshakes_total", dimensions: [("listener", listener), ("result", "completed")]).increment()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !completed, error is NIOSSLError || error is BoringSSLError {
            completed = true
            Counter(label: "estuary_tls_handshakes_total", dimensions: [("listener", listener), ("result", "failed")]).increment()
        }
        context.fireErrorCaught(error)
    }
}

@available(*, unavailable)
extension TLSHandshakeCounter: Sendable {}
