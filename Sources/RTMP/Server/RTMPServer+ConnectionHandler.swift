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
    ///   - random: fills S1 (a seeded generator makes a connection replay byte for byte).
    public static func makeConnectionHandler(
        configuration: RTMPServerConfiguration,
        admission: any SessionAdmission,
        logger: Logger,
        random: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
    ) -> any ChannelHandler {
        RTMPServerConnectionHandler(configuration: configuration, admission: admission, logger: logger, random: random)
    }
}
