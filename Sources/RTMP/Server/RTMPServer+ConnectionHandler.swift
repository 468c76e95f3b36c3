import Logging
import NIOCore
import Session

extension RTMPServer {
    /// The handler the listener puts on every accepted connection (handshake, chunk stream,
    /// session), for driving one connection without a socket: tests and the FuzzRTMPConnection
    /// fuzz target run it on an `EmbeddedChannel`. There, the admission must be an
    /// ``ImmediateSessionAdmission``: an async admission answers from a Task on another thread.
    ///
    /// - Parameters:
    ///   - rtmpFormat: the index of the `RTMPChunkSerializer` among the hubs' serializers.
    ///   - random: fills S1 (a seeded generator makes a connection replay byte for byte).
    public static func makeConnectionHandler(
        configuration: RTMPServerConfiguration,
        admission: any SessionAdmission,
        rtmpFormat: Int,
        logger: Logger,
        random: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
    ) -> any ChannelHandler {
        RTMPServerConnectionHandler(configuration: configuration, admission: admission, rtmpFormat: rtmpFormat, logger: logger, random: random)
    }
}
