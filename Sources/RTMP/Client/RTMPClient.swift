import NIOCore
import NIOPosix

/// Opens RTMP client connections (`RTMPClientHandler` behind `ClientHandshakeHandler`).
public enum RTMPClient {
    /// Connects to `url` and plays or publishes its stream. The returned channel is the
    /// session: events arrive at `onEvent` (on the channel's event loop), a publisher
    /// writes `MediaFrame`s to it, and closing it ends the session.
    public static func connect(
        _ url: RTMPClientURL,
        role: RTMPClientHandler.Role,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        connectTimeout: TimeAmount = .seconds(5),
        limits: ChunkLimits = .init(),
        acceptsReconnectRequests: Bool = false,
        onEvent: @escaping @Sendable (RTMPClientEvent) -> Void
    ) async throws -> any Channel {
        try await ClientBootstrap(group: group)
            .connectTimeout(connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ClientHandshakeHandler())
                    try channel.pipeline.syncOperations.addHandler(RTMPClientHandler(url: url, role: role, limits: limits, acceptsReconnectRequests: acceptsReconnectRequests, onEvent: onEvent))
                }
            }
            .connect(host: url.host, port: url.port)
            .get()
    }
}
