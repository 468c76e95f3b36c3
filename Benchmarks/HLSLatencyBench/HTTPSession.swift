import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

struct HTTPResponse: Sendable {
    var status: Int
    var body: ByteBuffer
    /// When the whole response had arrived (the moment a player could parse it).
    var receivedAt: ContinuousClock.Instant

    var text: String { String(buffer: body) }
}

/// Every connection of the run, so that the end of the run can close them all (a request
/// blocked in a playlist reload then ends at once instead of after the server's timeout).
final class ConnectionRegistry: Sendable {
    private let channels = NIOLockedValueBox<[any Channel]>([])
    private let closed = NIOLockedValueBox(false)

    /// Returns false (and closes `channel`) when the run already ended.
    @discardableResult
    func add(_ channel: any Channel) -> Bool {
        let accepted = closed.withLockedValue { closed in
            if !closed { channels.withLockedValue { $0.append(channel) } }
            return !closed
        }
        if !accepted { channel.close(promise: nil) }
        return accepted
    }

    /// True once the run ended; errors from then on are the closing, not the server.
    var isClosed: Bool { closed.withLockedValue { $0 } }

    func closeAll() {
        let all = closed.withLockedValue { closed in
            closed = true
            return channels.withLockedValue { channels in
                defer { channels = [] }
                return channels
            }
        }
        for channel in all { channel.close(promise: nil) }
    }
}

/// One keep-alive HTTP/1.1 connection with sequential requests, as a player keeps to its server.
struct HTTPSession {
    let host: String
    let port: Int
    private var inbound: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator
    private let outbound: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>
    private let clock = ContinuousClock()
    /// Bytes of response bodies received.
    private(set) var bytesReceived = 0
    private(set) var requests = 0

    /// Maximum body accepted (a part is tens of kilobytes; a segment ~ a megabyte).
    static let maximumBodyBytes = 32 << 20

    private init(host: String, port: Int, inbound: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator, outbound: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>) {
        self.host = host
        self.port = port
        self.inbound = inbound
        self.outbound = outbound
    }

    /// Connects, runs `body` with the session, and closes the connection.
    static func with<Result: Sendable>(
        host: String,
        port: Int,
        group: any EventLoopGroup,
        registry: ConnectionRegistry,
        _ body: (inout HTTPSession) async throws -> Result
    ) async throws -> Result {
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(.seconds(5))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
                }
            }
        guard registry.add(channel.channel) else { throw BenchError.message("run ended") }
        return try await channel.executeThenClose { inbound, outbound in
            var session = HTTPSession(host: host, port: port, inbound: inbound.makeAsyncIterator(), outbound: outbound)
            return try await body(&session)
        }
    }

    /// GET `path`; the whole body is read.
    mutating func get(_ path: String) async throws -> HTTPResponse {
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path)
        head.headers.add(name: "Host", value: "\(host):\(port)")
        head.headers.add(name: "User-Agent", value: "hls-latency-bench")
        try await outbound.write(contentsOf: [.head(head), .end(nil)])
        requests += 1
        var status = 0
        var body = ByteBuffer()
        // Bounded: the body limit ends an endless response; a closed connection ends the stream.
        while let part = try await inbound.next() {
            switch part {
            case .head(let responseHead):
                status = Int(responseHead.status.code)
            case .body(var bytes):
                bytesReceived += bytes.readableBytes
                guard body.readableBytes + bytes.readableBytes <= Self.maximumBodyBytes else {
                    throw BenchError.message("response to \(path) is too large")
                }
                body.writeBuffer(&bytes)
            case .end:
                return HTTPResponse(status: status, body: body, receivedAt: clock.now)
            }
        }
        throw BenchError.message("connection closed during GET \(path)")
    }
}
