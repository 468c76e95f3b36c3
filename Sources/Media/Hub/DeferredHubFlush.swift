import NIOCore
import Synchronization

/// Wakes a hub's viewers after frames published from outside a socket's read loop (an
/// upstream pull, a bus feed): at once when the hub says so, or with one forced flush when
/// its merged-write interval is due, so the last frames of a burst never wait for the next
/// burst. An RTMP publisher does the same with its channel's read-complete.
public final class DeferredHubFlush: Sendable {
    private let hub: StreamHub
    private let loop: any EventLoop
    private let scheduled = Mutex(false)

    public init(hub: StreamHub, loop: any EventLoop) {
        self.hub = hub
        self.loop = loop
    }

    /// Call after publishing a batch of frames.
    public func afterPublishing() {
        guard let deferral = hub.flush() else { return }
        let schedule = scheduled.withLock { scheduled -> Bool in
            guard !scheduled else { return false }
            scheduled = true
            return true
        }
        guard schedule else { return }
        let hub = hub
        loop.scheduleTask(in: deferral) { [self] in
            scheduled.withLock { $0 = false }
            hub.flush(force: true)
        }
    }
}
