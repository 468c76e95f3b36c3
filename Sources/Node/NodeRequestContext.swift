import Hummingbird
import NIOCore

/// The context of every HTTP request a node answers: Hummingbird's core context plus the
/// peer's address, which a play request carries to the admission path (and its logs)
/// whatever the protocol.
struct NodeRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
    }
}
