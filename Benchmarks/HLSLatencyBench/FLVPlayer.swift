import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// An HTTP-FLV viewer for the cluster-hop benchmark: `GET /app/name.flv`, de-chunks the
/// body, walks the FLV tags and notes when each video frame arrived (the time its last
/// byte was read). With `records` false it only counts bytes (a load viewer).
///
/// The latency of a frame is then its arrival minus the instant the publisher wrote it,
/// the same measure as the HLS players' availability latency, with nothing but the
/// node(s) between the two.
final class FLVPlayerHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer

    struct Result: Sendable {
        var frames: [FrameArrival] = []
        var bodyBytes = 0
        var status = 0
        var errors: [String] = []
    }

    private enum Stage {
        case head
        case chunkSize
        case chunkData(remaining: Int)
        case chunkEnd
        case done
    }

    // `@unchecked Sendable`: every field is touched on the channel's event loop only,
    // except `result`, which is behind its lock.
    private let records: Bool
    private let path: String
    private var stage = Stage.head
    private var pending = ByteBuffer()
    private var flv = ByteBuffer()
    private var flvHeaderSkipped = false
    let result = NIOLockedValueBox(Result())

    init(path: String, records: Bool) {
        self.path = path
        self.records = records
    }

    func channelActive(context: ChannelHandlerContext) {
        let request = "GET \(path) HTTP/1.1\r\nHost: bench\r\nUser-Agent: hls-latency-bench\r\n\r\n"
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: request)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        let now = ContinuousClock.now
        pending.writeBuffer(&bytes)
        parseHTTP(now: now)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        result.withLockedValue { $0.errors.append("\(error)") }
        context.close(promise: nil)
    }

    private func parseHTTP(now: ContinuousClock.Instant) {
        while true {
            switch stage {
            case .head:
                guard let end = pending.readableBytesView.firstRange(of: Array("\r\n\r\n".utf8)) else { return }
                let length = pending.readableBytesView.distance(from: pending.readableBytesView.startIndex, to: end.upperBound)
                let head = pending.readString(length: length) ?? ""
                let status = head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
                result.withLockedValue { $0.status = status }
                guard status == 200, head.lowercased().contains("transfer-encoding: chunked") else {
                    result.withLockedValue { $0.errors.append("unexpected response: \(head.prefix(80))") }
                    stage = .done
                    return
                }
                stage = .chunkSize
            case .chunkSize:
                guard let end = pending.readableBytesView.firstRange(of: Array("\r\n".utf8)) else { return }
                let length = pending.readableBytesView.distance(from: pending.readableBytesView.startIndex, to: end.lowerBound)
                let text = pending.readString(length: length) ?? ""
                pending.moveReaderIndex(forwardBy: 2)
                guard let size = Int(text.split(separator: ";").first ?? "", radix: 16) else {
                    stage = .done
                    return
                }
                stage = size == 0 ? .done : .chunkData(remaining: size)
            case .chunkData(let remaining):
                guard pending.readableBytes > 0 else { return }
                let take = min(remaining, pending.readableBytes)
                if var slice = pending.readSlice(length: take) {
                    result.withLockedValue { $0.bodyBytes += take }
                    if records { flv.writeBuffer(&slice) }
                }
                stage = take == remaining ? .chunkEnd : .chunkData(remaining: remaining - take)
                if records { parseFLV(now: now) }
            case .chunkEnd:
                guard pending.readableBytes >= 2 else { return }
                pending.moveReaderIndex(forwardBy: 2)
                stage = .chunkSize
            case .done:
                pending.clear()
                return
            }
            pending.discardReadBytes()
        }
    }

    /// Video tags: `0x09`, size, timestamp; the frame's PTS adds the AVC composition time.
    private func parseFLV(now: ContinuousClock.Instant) {
        if !flvHeaderSkipped {
            guard flv.readableBytes >= 13 else { return }
            flv.moveReaderIndex(forwardBy: 13)
            flvHeaderSkipped = true
        }
        var arrivals: [FrameArrival] = []
        while flv.readableBytes >= 11,
              let type = flv.getInteger(at: flv.readerIndex, as: UInt8.self),
              let size = flv.getInteger(at: flv.readerIndex + 1, as: UInt32.self).map({ Int($0 >> 8) }),
              flv.readableBytes >= 11 + size + 4 {
            let base = flv.readerIndex
            let low = flv.getInteger(at: base + 4, as: UInt32.self).map { $0 >> 8 } ?? 0
            let high = UInt32(flv.getInteger(at: base + 7, as: UInt8.self) ?? 0)
            let timestamp = Int64(high << 24 | low)
            if type & 0x1F == 9, size >= 5,
               let first = flv.getInteger(at: base + 11, as: UInt8.self),
               let packetType = flv.getInteger(at: base + 12, as: UInt8.self), packetType == 1,
               let composition = flv.getInteger(at: base + 13, as: UInt32.self) {
                // SI24 composition time, sign-extended.
                let raw = Int32(bitPattern: composition & 0xFFFF_FF00) >> 8
                arrivals.append(FrameArrival(
                    pts: timestamp + Int64(raw), dts: timestamp, isKeyframe: first >> 4 == 1,
                    availableAt: now, fetchedAt: now, unit: PartKey(sequence: 0, index: 0)
                ))
            }
            flv.moveReaderIndex(forwardBy: 11 + size + 4)
        }
        flv.discardReadBytes()
        if !arrivals.isEmpty {
            result.withLockedValue { $0.frames += arrivals }
        }
    }
}

enum FLVPlayer {
    /// A measuring player: as `run`, asking again (every 250 ms, for up to 10 s) while the
    /// node answers 404, which a node down the line does until the stream reaches it.
    static func runOnceLive(host: String, port: Int, path: String, group: any EventLoopGroup, registry: ConnectionRegistry, stopAt: ContinuousClock.Instant) async -> FLVPlayerHandler.Result {
        var result = FLVPlayerHandler.Result()
        for _ in 0..<40 {
            result = await run(host: host, port: port, path: path, records: true, group: group, registry: registry, stopAt: stopAt)
            guard result.status == 404, result.frames.isEmpty, ContinuousClock.now < stopAt else { break }
            try? await Task.sleep(for: .milliseconds(250))
        }
        return result
    }

    /// Connects, plays until the registry closes the connection (or `stopAt`), and returns
    /// what arrived.
    static func run(host: String, port: Int, path: String, records: Bool, group: any EventLoopGroup, registry: ConnectionRegistry, stopAt: ContinuousClock.Instant) async -> FLVPlayerHandler.Result {
        let handler = FLVPlayerHandler(path: path, records: records)
        do {
            let channel = try await ClientBootstrap(group: group)
                .connectTimeout(.seconds(5))
                .channelOption(.socketOption(.so_rcvbuf), value: 256 * 1024)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(handler) }
                }
                .connect(host: host, port: port).get()
            guard registry.add(channel) else {
                try? await channel.close()
                return handler.result.withLockedValue { $0 }
            }
            let deadline = channel.eventLoop.scheduleTask(deadline: .now() + .nanoseconds(Int64((stopAt - .now).components.seconds) * 1_000_000_000)) {
                channel.close(promise: nil)
            }
            try? await channel.closeFuture.get()
            deadline.cancel()
        } catch {
            handler.result.withLockedValue { $0.errors.append("connect: \(error)") }
        }
        return handler.result.withLockedValue { $0 }
    }
}
