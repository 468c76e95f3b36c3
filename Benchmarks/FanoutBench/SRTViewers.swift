import CSRT
import Foundation
import Synchronization

/// SRT viewers for the fan-out benchmark: libsrt callers in this process, counting bytes
/// and the longest wait between two messages. Only bytes are counted: the TS is not
/// demuxed, so the generator stays light.
///
/// The callers share one local UDP port, hence one libsrt multiplexer and one receiving
/// thread, and one thread reads them all (`srt_epoll_uwait`), as the RTMP viewers share
/// one event loop. On loopback the node's `sendmsg` also wakes the receiving thread, and is
/// charged for it: a thread per caller (100 libsrt receive queues) made the node pay a
/// wake-up and a preemption for nearly every datagram, a cost of the generator and not of
/// the node, which remote players do not put on it.
final class SRTViewers: Sendable {
    struct Totals: Sendable {
        var bytes = 0
        var connected = 0
        var failed = 0
        var ended = 0
        /// Viewers that waited over a second for a message inside the window.
        var stalled = 0
        var longestWait: Duration = .zero
    }

    private struct Viewer {
        var bytes = 0
        var connected = false
        var failed = false
        var ended = false
        var lastMessage: ContinuousClock.Instant?
        var longestWait: Duration = .zero
    }

    private let viewers: Mutex<[Viewer]>
    private let stop = Atomic<Bool>(false)

    init(count: Int) {
        viewers = Mutex(Array(repeating: Viewer(), count: count))
    }

    /// Connects every viewer of `streamID` at host:port, `ramp` apart, from this thread, and
    /// starts the reading thread.
    func start(host: String, port: Int, streamID: String, latencyMilliseconds: Int32, ramp: Duration) {
        srt_startup()
        let epoll = srt_epoll_create()
        let count = viewers.withLock { $0.count }
        var sockets: [SRTSOCKET: Int] = [:]
        var localPort: UInt16 = 0
        for index in 0..<count {
            guard let socket = connect(host: host, port: port, streamID: streamID, latency: latencyMilliseconds, localPort: &localPort) else {
                viewers.withLock { $0[index].failed = true }
                continue
            }
            sockets[socket] = index
            var events = Int32(SRT_EPOLL_IN.rawValue | SRT_EPOLL_ERR.rawValue)
            _ = srt_epoll_add_usock(epoll, socket, &events)
            viewers.withLock { $0[index].connected = true }
            if ramp > .zero { Thread.sleep(forTimeInterval: Double(ramp.components.attoseconds) / 1e18 + Double(ramp.components.seconds)) }
        }
        let thread = Thread { [self, sockets] in read(epoll, sockets) }
        thread.name = "srt-viewers"
        thread.start()
    }

    /// Waits from now on are the window's (the connects and first GOP came before it).
    func beginWindow() {
        let now = ContinuousClock.now
        viewers.withLock { viewers in
            for index in viewers.indices {
                viewers[index].longestWait = .zero
                viewers[index].lastMessage = viewers[index].lastMessage.map { _ in now }
            }
        }
    }

    func totals() -> Totals {
        let now = ContinuousClock.now
        return viewers.withLock { viewers in
            var totals = Totals()
            for viewer in viewers {
                totals.bytes += viewer.bytes
                totals.connected += viewer.connected ? 1 : 0
                totals.failed += viewer.failed ? 1 : 0
                totals.ended += viewer.ended ? 1 : 0
                let pending = viewer.lastMessage.map { now - $0 } ?? .zero
                let wait = max(viewer.longestWait, viewer.ended ? .zero : pending)
                if wait > .seconds(1) { totals.stalled += 1 }
                totals.longestWait = max(totals.longestWait, wait)
            }
            return totals
        }
    }

    func finish() {
        stop.store(true, ordering: .relaxed)
    }

    /// A caller connected to host:port, bound to `localPort` (the first one picks it), with
    /// its reads made non-blocking; nil when it could not connect.
    private func connect(host: String, port: Int, streamID: String, latency: Int32, localPort: inout UInt16) -> SRTSOCKET? {
        let socket = srt_create_socket()
        _ = streamID.withCString { srt_setsockflag(socket, SRTO_STREAMID, $0, Int32(strlen($0))) }
        var latencyValue = latency
        _ = srt_setsockflag(socket, SRTO_LATENCY, &latencyValue, Int32(MemoryLayout<Int32>.size))
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_port = in_port_t(localPort.bigEndian)
        inet_pton(AF_INET, host, &local.sin_addr)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let size = Int32(MemoryLayout<sockaddr_in>.size)
        let connected = withUnsafePointer(to: &local) { local in
            local.withMemoryRebound(to: sockaddr.self, capacity: 1) { local in
                withUnsafePointer(to: &address) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { remote in
                        srt_bind(socket, local, size) != -1 && srt_connect(socket, remote, size) != -1
                    }
                }
            }
        }
        guard connected else {
            srt_close(socket)
            return nil
        }
        if localPort == 0 {
            var bound = sockaddr_in()
            var length = size
            _ = withUnsafeMutablePointer(to: &bound) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { srt_getsockname(socket, $0, &length) }
            }
            localPort = UInt16(bigEndian: bound.sin_port)
        }
        var blocking = false
        _ = srt_setsockflag(socket, SRTO_RCVSYN, &blocking, Int32(MemoryLayout<Bool>.size))
        return socket
    }

    /// The reading thread: every message of every caller until `finish`.
    private func read(_ epoll: Int32, _ sockets: [SRTSOCKET: Int]) {
        var ready = [SRT_EPOLL_EVENT](repeating: SRT_EPOLL_EVENT(), count: 256)
        var buffer = [CChar](repeating: 0, count: 1500)
        var open = Set(sockets.keys)
        while !stop.load(ordering: .relaxed), !open.isEmpty {
            let count = srt_epoll_uwait(epoll, &ready, Int32(ready.count), 100)
            guard count > 0 else {
                // An error (not a timeout) would return at once: not a busy loop.
                if count < 0, srt_getlasterror(nil) != Int32(SRT_ETIMEOUT.rawValue) { Thread.sleep(forTimeInterval: 0.1) }
                continue
            }
            for event in ready.prefix(Int(count)) {
                guard let index = sockets[event.fd] else { continue }
                var received = 0
                var gone = event.events & Int32(SRT_EPOLL_ERR.rawValue) != 0
                while !gone {
                    let size = srt_recvmsg(event.fd, &buffer, Int32(buffer.count))
                    if size < 0 {
                        gone = srt_getlasterror(nil) != Int32(SRT_EASYNCRCV.rawValue)
                        break
                    }
                    received += Int(size)
                }
                let now = ContinuousClock.now
                viewers.withLock { viewers in
                    if received > 0 {
                        if let last = viewers[index].lastMessage { viewers[index].longestWait = max(viewers[index].longestWait, now - last) }
                        viewers[index].lastMessage = now
                        viewers[index].bytes += received
                    }
                    if gone { viewers[index].ended = true }
                }
                if gone {
                    // libsrt takes a broken socket out of the epoll itself.
                    open.remove(event.fd)
                    srt_close(event.fd)
                }
            }
        }
        for socket in open { srt_close(socket) }
        srt_epoll_release(epoll)
    }
}
