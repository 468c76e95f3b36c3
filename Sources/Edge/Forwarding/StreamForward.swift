import Logging
import Media
import Metrics
import NIOConcurrencyHelpers
import NIOCore
import RTMP
import Session

/// Pushes one stream to one `ForwardTarget` over RTMP for as long as the stream lives,
/// reconnecting with backoff (1 s, doubling to 30 s) when the target refuses or drops it.
/// A target that drains (Enhanced RTMP v2's reconnect request, which the forward
/// advertises it understands) is left at once for the server it names, or for the
/// target's own URL, without backoff; later reconnects go back to the configured target.
///
/// The stream's frames come from a `FrameSubscription` (`.wake`), drained on the push
/// connection's event loop only while the socket is writable: a slow or dead target
/// leaves frames in the subscription's byte-bounded queue, which skips to the next
/// keyframe when full. Local viewers and the publisher never wait for a forward.
///
/// Each push connection the target accepted is a viewing session of protocol `forward`
/// (`SessionAdmission.playOutbound`), listed with the target as its address and the media
/// bytes it sent. Kicking it drops that connection; being configured, the forward connects
/// again after its first backoff.
public final class StreamForward: Sendable {
    /// What `GET /api/v1/forwards` shows of a forward.
    public struct Status: Sendable, Codable, Equatable {
        public enum State: String, Sendable, Codable {
            case connecting, forwarding, backingOff = "backing-off", stopped
        }
        public var stream: String
        public var target: String
        public var state: State
        public var connects = 0
        public var framesSent = 0
        public var skippedFrames = 0
        public var lastError: String?
    }

    public let path: StreamPath
    public let target: ForwardTarget
    private let hub: StreamHub
    private let status: NIOLockedValueBox<Status>
    private let task = NIOLockedValueBox<Task<Void, Never>?>(nil)
    /// Makes each push connection a session; nil where the node keeps none (a test's).
    private let admission: (any SessionAdmission)?

    static let firstBackoff = Duration.seconds(1)
    static let maxBackoff = Duration.seconds(30)
    static let startTimeout = TimeAmount.seconds(5)

    /// Starts forwarding `hub`'s stream to `target`.
    public init(path: StreamPath, hub: StreamHub, target: ForwardTarget, admission: (any SessionAdmission)? = nil, logger: Logger) {
        self.admission = admission
        self.path = path
        self.target = target
        self.hub = hub
        self.status = NIOLockedValueBox(Status(stream: "\(path)", target: "\(target)", state: .connecting))
        var logger = logger
        logger[metadataKey: "stream"] = "\(path)"
        logger[metadataKey: "forward"] = "\(target)"
        let task = Task { [self] in await self.run(logger: logger) }
        self.task.withLockedValue { $0 = task }
        ForwardMetrics.active.increment()
    }

    public var currentStatus: Status { status.withLockedValue { $0 } }

    public var isStopped: Bool { status.withLockedValue { $0.state == .stopped } }

    public func stop() {
        task.withLockedValue { $0 }?.cancel()
    }

    private func run(logger: Logger) async {
        var backoff = Backoff(first: Self.firstBackoff, max: Self.maxBackoff)
        var movedTo: RTMPClientURL?
        while !Task.isCancelled, !hub.isEnded {
            status.withLockedValue { $0.state = .connecting; $0.connects += 1 }
            let outcome = await pushOnce(to: movedTo ?? target.url(for: path))
            movedTo = nil
            guard !Task.isCancelled, !hub.isEnded else { break }
            switch outcome {
            case .streamEnded:
                break
            case .moved(let url):
                ForwardMetrics.moves.increment()
                logger.notice("the target asked the forward to reconnect", metadata: ["to": "\(url)"])
                movedTo = url
                backoff.reset()
                continue
            case .refused, .dropped:
                break
            }
            if case .dropped = outcome, status.withLockedValue({ $0.framesSent }) > 0 {
                // It had been forwarding: start again from the first step.
                backoff.reset()
            }
            let delay = backoff.next()
            switch outcome {
            case .refused(let why), .dropped(let why): Self.failed(why, delay: delay, status: status, logger: logger)
            case .streamEnded, .moved: break
            }
            try? await Task.sleep(for: delay)
        }
        status.withLockedValue { $0.state = .stopped }
        ForwardMetrics.active.decrement()
        logger.info("forward stopped")
    }

    private static func failed(_ why: String, delay: Duration, status: NIOLockedValueBox<Status>, logger: Logger) {
        ForwardMetrics.failures.increment()
        status.withLockedValue { $0.lastError = why; $0.state = .backingOff }
        logger.warning("forward failed; retrying in \(delay)", metadata: ["reason": "\(why)"])
    }

    private enum Outcome {
        case streamEnded
        /// The target asked to reconnect (to this URL).
        case moved(RTMPClientURL)
        case refused(String)
        case dropped(String)
    }

    /// One push connection, from connect to its end.
    private func pushOnce(to url: RTMPClientURL) async -> Outcome {
        let session = PushSession(url: url)
        let channel: any Channel
        do {
            channel = try await RTMPClient.connect(url, role: .publish, connectTimeout: Self.startTimeout, acceptsReconnectRequests: true) { event in
                session.handle(event)
            }
        } catch {
            return .refused(ConnectionFailure.describe(error))
        }
        let deadline = channel.eventLoop.scheduleTask(in: Self.startTimeout) { channel.close(promise: nil) }
        let started = await session.started.wait()
        deadline.cancel()
        guard started else {
            channel.close(promise: nil)
            return .refused(session.reason ?? "no answer")
        }
        status.withLockedValue { $0.state = .forwarding; $0.lastError = nil }
        ForwardMetrics.connected.increment()
        let traffic = SessionTraffic()
        var viewing: PlaySession?
        if let admission {
            let request = OutboundRequest(hub: hub, transport: .forward, target: url.tcURL, traffic: traffic, kick: { _ in
                channel.close(promise: nil)
            })
            if case .accepted(let session) = await admission.playOutbound(request) {
                viewing = session
                await session.start()
            }
        }
        let pump = Pump(channel: channel, status: status, traffic: traffic)
        session.onWritable = { pump.drainIfWritable() }
        session.onReconnectRequest = { channel.close(promise: nil) }
        let subscription = FrameSubscription.start(on: hub, delivery: .wake { drain in
            pump.offer(drain)
        }, keepsStreamOpen: true)
        guard let subscription else {
            channel.close(promise: nil)
            viewing?.end(.streamEnded)
            return .streamEnded
        }
        let end = await withTaskCancellationHandler {
            await session.ended.wait()
        } onCancel: {
            channel.close(promise: nil)
        }
        subscription.cancel()
        status.withLockedValue { $0.skippedFrames += subscription.statistics.droppedFrames }
        if pump.sawEnd {
            viewing?.end(.streamEnded)
            return .streamEnded
        }
        if let moved = session.movedTo {
            viewing?.end(.left)
            return .moved(moved)
        }
        viewing?.end(Task.isCancelled ? .shutdown : .failed(end))
        return .dropped(end)
    }

    /// Moves frames from the subscription to the socket on the channel's event loop, only
    /// while the socket takes them.
    private final class Pump: Sendable {
        let channel: any Channel
        let status: NIOLockedValueBox<Status>
        let traffic: SessionTraffic
        private let drain = NIOLockedValueBox<(@Sendable () -> FrameSubscription.Batch)?>(nil)
        private let ended = NIOLockedValueBox(false)

        init(channel: any Channel, status: NIOLockedValueBox<Status>, traffic: SessionTraffic) {
            self.channel = channel
            self.status = status
            self.traffic = traffic
        }

        var sawEnd: Bool { ended.withLockedValue { $0 } }

        /// The hub says frames wait: take them on the event loop.
        func offer(_ drain: @escaping @Sendable () -> FrameSubscription.Batch) {
            self.drain.withLockedValue { $0 = drain }
            channel.eventLoop.execute { self.drainIfWritable() }
        }

        /// On the event loop: writes what waits, unless the socket is full (then the
        /// writability change calls again).
        func drainIfWritable() {
            guard channel.isWritable, let drain = drain.withLockedValue({ current -> (@Sendable () -> FrameSubscription.Batch)? in
                defer { current = nil }
                return current
            }) else { return }
            let batch = drain()
            var bytes = 0
            for frame in batch.frames {
                bytes += frame.payload.readableBytes
                channel.write(frame, promise: nil)
            }
            // The session's bytes out, once per batch (its media, as the target is sent it).
            traffic.sent(bytes)
            channel.flush()
            ForwardMetrics.framesSent.increment(by: batch.frames.count)
            status.withLockedValue { $0.framesSent += batch.frames.count }
            if batch.ended {
                ended.withLockedValue { $0 = true }
                channel.close(promise: nil)
            }
        }
    }
}

/// The push connection's events, turned into what `StreamForward` waits for.
private final class PushSession: Sendable {
    /// Where this session pushes: the base of a reconnect request without a URL.
    let url: RTMPClientURL
    /// Whether the target accepted the publish (false: refused, or the connection ended).
    let started = OneShot<Bool>()
    /// Why the connection ended.
    let ended = OneShot<String>()
    private let refusal = NIOLockedValueBox<String?>(nil)
    private let writable = NIOLockedValueBox<(@Sendable () -> Void)?>(nil)
    private let reconnect = NIOLockedValueBox<(@Sendable () -> Void)?>(nil)
    private let moved = NIOLockedValueBox<RTMPClientURL?>(nil)

    init(url: RTMPClientURL) {
        self.url = url
    }

    /// Where the target asked to be reconnected to, if it did.
    var movedTo: RTMPClientURL? { moved.withLockedValue { $0 } }

    var onReconnectRequest: (@Sendable () -> Void)? {
        get { reconnect.withLockedValue { $0 } }
        set { reconnect.withLockedValue { $0 = newValue } }
    }

    var reason: String? { refusal.withLockedValue { $0 } ?? ended.value }

    var onWritable: (@Sendable () -> Void)? {
        get { writable.withLockedValue { $0 } }
        set { writable.withLockedValue { $0 = newValue } }
    }

    func handle(_ event: RTMPClientEvent) {
        switch event {
        case .started:
            started.set(true)
        case .refused(let code):
            refusal.withLockedValue { $0 = code }
            started.set(false)
        case .frames:
            break
        case .writable:
            onWritable?()
        case .reconnectRequested(let tcUrl):
            // The same stream name at the server named (an unusable URL: the same server).
            let next = tcUrl.flatMap { try? RTMPClientURL("\($0)/\(url.streamName)") } ?? url
            moved.withLockedValue { $0 = next }
            onReconnectRequest?()
        case .ended(let reason, _):
            ended.set(reason)
            started.set(false)
        }
    }
}

enum ForwardMetrics {
    /// Forwards running (connected or retrying).
    static let active = Meter(label: "estuary_forwards_active")
    /// Push connections the target accepted.
    static let connected = Counter(label: "estuary_forward_connections_total")
    /// Push connections refused or dropped.
    static let failures = Counter(label: "estuary_forward_failures_total")
    static let framesSent = Counter(label: "estuary_forward_frames_sent_total")
    /// Reconnects a target asked for (it drains).
    static let moves = Counter(label: "estuary_forward_moves_total")
}
