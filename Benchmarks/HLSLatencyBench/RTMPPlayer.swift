import Media
import NIOConcurrencyHelpers
import NIOCore
import RTMP

/// An RTMP viewer for the latency benchmarks (`--rtmp-play`): the project's RTMP client
/// plays the stream and notes when each video frame arrived (the end of the socket read
/// that completed it), with the server's timestamps.
enum RTMPPlayer {
    static func run(url: RTMPTarget, group: any EventLoopGroup, registry: ConnectionRegistry, stopAt: ContinuousClock.Instant) async -> FLVPlayerHandler.Result {
        let result = NIOLockedValueBox(FLVPlayerHandler.Result())
        // A player that asks before the stream is live is refused: ask again, 250 ms apart, for up to 10 s.
        for _ in 0..<40 {
            let refused = NIOLockedValueBox(false)
            do {
                let channel = try await RTMPClient.connect(
                    RTMPClientURL(host: url.host, port: url.port, app: url.app, streamName: url.streamName), role: .play, group: group
                ) { event in
                    switch event {
                    case .frames(let frames):
                        let now = ContinuousClock.now
                        let arrivals = frames.filter { $0.kind == .video && !$0.isSequenceHeader && $0.payload.readableBytes > 5 }.map {
                            FrameArrival(pts: $0.presentationTimestamp, dts: $0.timestamp, isKeyframe: $0.isKeyframe, availableAt: now, fetchedAt: now, unit: PartKey(sequence: 0, index: 0))
                        }
                        if !arrivals.isEmpty { result.withLockedValue { $0.frames += arrivals } }
                    case .refused(let reason):
                        refused.withLockedValue { $0 = true }
                        result.withLockedValue { $0.errors.append("refused: \(reason)") }
                    default:
                        break
                    }
                }
                guard registry.add(channel) else {
                    try? await channel.close()
                    break
                }
                let deadline = channel.eventLoop.scheduleTask(deadline: .now() + .nanoseconds(Int64((stopAt - .now).components.seconds) * 1_000_000_000)) {
                    channel.close(promise: nil)
                }
                try? await channel.closeFuture.get()
                deadline.cancel()
            } catch {
                result.withLockedValue { $0.errors.append("connect: \(error)") }
            }
            let done = result.withLockedValue { !$0.frames.isEmpty } || !refused.withLockedValue({ $0 }) || ContinuousClock.now >= stopAt
            if done { break }
            result.withLockedValue { $0.errors.removeAll() }
            try? await Task.sleep(for: .milliseconds(250))
        }
        return result.withLockedValue { $0 }
    }
}
