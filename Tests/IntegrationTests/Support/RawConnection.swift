import NIOCore
import NIOPosix
import Synchronization

/// A plain TCP client that records everything the server sends and when the server closes.
///
/// Reads never block: tests poll ``count``, ``isClosed`` and ``bytes(from:)`` with bounded waits.
final class RawConnection: Sendable {
    struct State {
        var received: [UInt8] = []
        var closed = false
        var closedAt: ContinuousClock.Instant?
        var error: String?
    }

    private let channel: any Channel
    private let box: StateBox

    private init(channel: any Channel, box: StateBox) {
        self.channel = channel
        self.box = box
    }

    /// Connects to `host:port` within `timeout`.
    ///
    /// - `from`: a local address to connect from (another loopback address, 127.0.0.2, is
    ///   another client as far as the server can tell).
    /// - `smallReceiveBuffer` sets a 4 KiB receive buffer (before connecting, so the window
    ///   stays small): with ``stopReading()``, a viewer whose socket soon takes nothing.
    static func connect(host: String = "127.0.0.1", port: Int, from localHost: String? = nil, smallReceiveBuffer: Bool = false, timeout: Duration = .seconds(3)) async throws -> RawConnection {
        let box = StateBox()
        let milliseconds = Int64(timeout.inSeconds * 1000)
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        if let localHost {
            bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: localHost, port: 0))
        }
        if smallReceiveBuffer {
            bootstrap = bootstrap.channelOption(.socketOption(.so_rcvbuf), value: 4096)
        }
        let channel = try await bootstrap
            .connectTimeout(.milliseconds(milliseconds))
            .channelInitializer { channel in
                do {
                    try channel.pipeline.syncOperations.addHandler(Collector(box: box))
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
            .connect(host: host, port: port)
            .get()
        return RawConnection(channel: channel, box: box)
    }

    /// Sends bytes; throws if the connection is gone.
    func send(_ bytes: [UInt8]) async throws {
        var buffer = self.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        try await self.send(buffer)
    }

    /// Sends a buffer; throws if the connection is gone.
    func send(_ buffer: ByteBuffer) async throws {
        try await self.channel.writeAndFlush(buffer).get()
    }

    /// Sends bytes, ignoring a failure because the server may already have closed (hostile input).
    @discardableResult
    func trySend(_ bytes: [UInt8]) async -> Bool {
        do {
            try await self.send(bytes)
            return true
        } catch {
            return false
        }
    }

    /// Stops reading from the socket: the kernel buffers fill and the server's writes stall.
    func stopReading() async {
        try? await self.channel.setOption(.autoRead, value: false).get()
    }

    /// Reads again (after ``stopReading()``): what the server sent, then its close, arrive.
    func resumeReading() async {
        try? await self.channel.setOption(.autoRead, value: true).get()
        self.channel.read()
    }

    /// Closes the connection from this side.
    func close() async {
        try? await self.channel.close().get()
    }

    var state: State { self.box.state.withLock { $0 } }

    /// The number of bytes received so far.
    var count: Int { self.box.state.withLock { $0.received.count } }

    /// True once the server closed the connection (EOF or reset) or this side closed it.
    var isClosed: Bool { self.box.state.withLock { $0.closed } }

    /// A copy of the received bytes from `offset` on.
    func bytes(from offset: Int = 0) -> [UInt8] {
        self.box.state.withLock { state in
            guard offset < state.received.count else { return [] }
            return Array(state.received[offset...])
        }
    }

    /// Waits up to `timeout` until at least `count` bytes have arrived; false on timeout or close.
    func waitForBytes(_ count: Int, timeout: Duration) async -> Bool {
        await eventually(timeout: timeout, interval: .milliseconds(10)) {
            let state = self.state
            return state.received.count >= count || state.closed
        }
        return self.count >= count
    }

    /// Waits up to `timeout` for the server to close the connection; returns whether it did.
    func waitForClose(timeout: Duration) async -> Bool {
        await eventually(timeout: timeout, interval: .milliseconds(10)) { self.isClosed }
    }
}

private final class StateBox: Sendable {
    let state = Mutex(RawConnection.State())
}

private final class Collector: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    let box: StateBox

    init(box: StateBox) {
        self.box = box
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = self.unwrapInboundIn(data)
        buffer.withUnsafeReadableBytes { bytes in
            self.box.state.withLock { $0.received.append(contentsOf: bytes) }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.markClosed(error: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.markClosed(error: "\(error)")
        context.close(promise: nil)
    }

    private func markClosed(error: String?) {
        self.box.state.withLock { state in
            if !state.closed {
                state.closed = true
                state.closedAt = .now
            }
            if state.error == nil, let error {
                state.error = error
            }
        }
    }
}

/// Free TCP ports on 127.0.0.1, found by binding to port 0.
enum FreePorts {
    static func allocate(_ count: Int) async throws -> [Int] {
        var channels: [any Channel] = []
        var ports: [Int] = []
        defer {
            for channel in channels {
                channel.close(promise: nil)
            }
        }
        for _ in 0..<count {
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .bind(host: "127.0.0.1", port: 0)
                .get()
            channels.append(channel)
            guard let port = channel.localAddress?.port else {
                throw IntegrationFailure("bound socket has no port")
            }
            ports.append(port)
        }
        for channel in channels {
            try? await channel.close().get()
        }
        channels.removeAll()
        return ports
    }
}
