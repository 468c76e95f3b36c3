import Logging
import Media
import Session
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ServiceLifecycle

/// The RTMP listener: accepts connections and runs an `RTMPServerConnectionHandler` on
/// each. A `Service`: on graceful shutdown it stops accepting, tells every peer the
/// stream is over (`onStatus`), and closes the connections.
public final class RTMPServer: Service, Sendable {
    private let configuration: RTMPServerConfiguration
    /// What a connection accepted now is given: the limits and timeouts of the latest
    /// configuration (`reconfigure`); a connection keeps those it was accepted with.
    private let environment: Reloadable<RTMPServerConnectionHandler.Environment>
    private let limiter: ConnectionLimiter
    private let logLimiter: LogRateLimiter
    private let admission: any SessionAdmission
    private let group: any EventLoopGroup
    private let logger: Logger
    private let connections = NIOLockedValueBox<[ObjectIdentifier: any Channel]>([:])
    private let boundPort = NIOLockedValueBox<Int?>(nil)
    private let onBound: (@Sendable (Int) -> Void)?
    private let name: String
    private let prepare: (@Sendable (any Channel) throws -> Void)?

    /// - Parameters:
    ///   - name: the listener's name in its log lines (`RTMP`, `RTMPS`).
    ///   - prepare: adds handlers before the RTMP connection's own at accept (RTMPS: TLS);
    ///     this module stays without TLS.
    ///   - onBound: called with the listening port once bound (useful with port 0).
    public init(
        configuration: RTMPServerConfiguration, admission: any SessionAdmission, group: any EventLoopGroup, logger: Logger,
        name: String = "RTMP", prepare: (@Sendable (any Channel) throws -> Void)? = nil, onBound: (@Sendable (Int) -> Void)? = nil
    ) {
        self.name = name
        self.prepare = prepare
        self.configuration = configuration
        self.admission = admission
        self.group = group
        self.logger = logger
        self.onBound = onBound
        let logLimiter = LogRateLimiter(burst: 20)
        self.logLimiter = logLimiter
        environment = Reloadable(RTMPServerConnectionHandler.Environment(configuration: configuration, admission: admission, logger: logger, logLimiter: logLimiter))
        limiter = ConnectionLimiter(limits: configuration.connectionLimits)
    }

    /// Limits and timeouts for the connections accepted from now on. The address, the port,
    /// the socket options and the node's reassembly budget are the listener's and stay.
    public func reconfigure(_ new: RTMPServerConfiguration) {
        var applied = new
        applied.host = configuration.host
        applied.port = configuration.port
        applied.socketSendBufferBytes = configuration.socketSendBufferBytes
        applied.chunkLimits.nodeBudget = configuration.chunkLimits.nodeBudget
        environment.set(RTMPServerConnectionHandler.Environment(configuration: applied, admission: admission, logger: logger, logLimiter: logLimiter))
        limiter.setLimits(applied.connectionLimits)
    }

    public var port: Int? { boundPort.withLockedValue { $0 } }

    public func run() async throws {
        let configuration = configuration
        let logger = logger
        let connections = connections
        let prepare = prepare
        let limiter = limiter
        let environment = environment
        var bootstrap = ServerBootstrap(group: group)
        if let bytes = configuration.socketSendBufferBytes {
            bootstrap = bootstrap.childChannelOption(.socketOption(.so_sndbuf), value: SocketOptionValue(clamping: bytes))
        }
        let server: any Channel
        do {
            server = try await bootstrap
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: configuration.writeBufferLowWaterMark, high: configuration.writeBufferHighWaterMark))
            .childChannelOption(.recvAllocator, value: ReceiveBuffers.rtmpSession)
            .childChannelOption(.maxMessagesPerRead, value: ReceiveBuffers.rtmpSessionReadsPerWakeUp)
            .childChannelInitializer { channel in
                // Limits first: a refused connection costs a close and nothing else. There is
                // nothing to tell an RTMP peer before its handshake, so the close is the answer.
                let address = channel.remoteAddress?.ipAddress ?? "unknown"
                if let refusal = limiter.admit(address: address) {
                    RTMPMetrics.refusedConnections(reason: refusal.rawValue)
                    if let count = limiter.refusalToLog() {
                        logger.warning("refusing RTMP connections: \(refusal.rawValue) (\(count) refused in the last second; last from \(address))")
                    }
                    // A failed initializer makes NIO close the accepted socket.
                    return channel.eventLoop.makeFailedFuture(ConnectionRefused(reason: refusal))
                }
                let id = ObjectIdentifier(channel)
                RTMPMetrics.openConnections(connections.withLockedValue { $0[id] = channel; return $0.count })
                channel.closeFuture.whenComplete { _ in
                    limiter.release(address: address)
                    RTMPMetrics.openConnections(connections.withLockedValue { $0.removeValue(forKey: id); return $0.count })
                }
                return channel.eventLoop.makeCompletedFuture {
                    try prepare?(channel)
                    try channel.pipeline.syncOperations.addHandler(
                        RTMPServerConnectionHandler(environment: environment.value)
                    )
                }
            }
            .bind(host: configuration.host, port: configuration.port)
            .get()
        } catch {
            throw RTMPListenerBindError(name: name, host: configuration.host, port: configuration.port, underlying: error)
        }
        let port = server.localAddress?.port ?? configuration.port
        boundPort.withLockedValue { $0 = port }
        logger.info("\(name) listening on \(configuration.host):\(port)")
        onBound?(port)

        // Cancellation too (another service of the group failed): the listener must close,
        // or the process would linger with its port open and serve nothing.
        try await withTaskCancellationOrGracefulShutdownHandler {
            try await server.closeFuture.get()
        } onCancelOrGracefulShutdown: {
            server.close(promise: nil)
        }
        // Stop every connection politely, then wait (bounded) for them to go.
        let open = connections.withLockedValue { Array($0.values) }
        for channel in open {
            channel.pipeline.fireUserInboundEventTriggered(RTMPServerShutdown())
        }
        // A peer that stopped reading cannot take its goodbye; do not wait for it forever.
        let forceClose = group.next().scheduleTask(in: .seconds(2)) {
            for channel in open { channel.close(promise: nil) }
        }
        for channel in open { _ = try? await channel.closeFuture.get() }
        forceClose.cancel()
        logger.info("\(name) listener stopped")
    }
}

/// Why the listener closed a connection at accept.
struct ConnectionRefused: Error {
    let reason: ConnectionLimiter.Refusal
}

/// The RTMP listener could not bind its address (in use, not permitted, no such address).
public struct RTMPListenerBindError: Error, CustomStringConvertible {
    public var name = "RTMP"
    public let host: String
    public let port: Int
    public let underlying: any Error

    public var description: String { "cannot listen for \(name) on \(host):\(port): \(underlying)" }
}
