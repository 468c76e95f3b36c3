import Hummingbird
import NIOCore
import Relay

/// The context of every HTTP request a node answers: Hummingbird's core context plus the
/// peer's address, which a play request carries to the admission path (and its logs)
/// whatever the protocol, and the connection, which an HTTP-FLV viewer's body is written on.
struct NodeRequestContext: RequestContext, PlaybackRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
        self.channel = source.channel
    }
}
