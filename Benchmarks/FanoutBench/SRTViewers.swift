import CSRT
import Foundation
import Synchronization

/// SRT viewers for the fan-out benchmark: libsrt callers in this process, one thread each
/// (libsrt's receive blocks), counting bytes and the longest wait between two messages.
/// Only bytes are counted: the TS is not demuxed, so the generator stays light.
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

    /// Starts every viewer of `streamID` at host:port, `ramp` apart.
    func start(host: String, port: Int, streamID: String, latencyMilliseconds: Int32, ramp: Duration) {
        srt_startup()
        let count = viewers.withLock { $0.count }
        for index in 0..<count {
            let thread = Thread { [self] in run(index, host: host, port: port, streamID: streamID, latency: latencyMilliseconds) }
            thread.name = "srt-viewer"
            thread.stackSize = 256 * 1024
            thread.start()
            if ramp > .zero { Thread.sleep(forTimeInterval: Double(ramp.components.attoseconds) / 1e18 + Double(ramp.components.seconds)) }
        }
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

    private func run(_ index: Int, host: String, port: Int, streamID: String, latency: Int32) {
        let socket = srt_create_socket()
        defer { srt_close(socket) }
        _ = streamID.withCString { srt_setsockflag(socket, SRTO_STREAMID, $0, Int32(strlen($0))) }
        var latencyValue = latency
        _ = srt_setsockflag(socket, SRTO_LATENCY, &latencyValue, Int32(MemoryLayout<Int32>.size))
        var timeout: Int32 = 1000
        _ = srt_setsockflag(socket, SRTO_RCVTIMEO, &timeout, Int32(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { srt_connect(socket, $0, Int32(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected != -1 else {
            viewers.withLock { $0[index].failed = true }
            return
        }
        viewers.withLock { $0[index].connected = true }
        var buffer = [CChar](repeating: 0, count: 1500)
        while !stop.load(ordering: .relaxed) {
            let received = srt_recvmsg(socket, &buffer, Int32(buffer.count))
            if received < 0 {
                if srt_getlasterror(nil) == Int32(SRT_EASYNCRCV.rawValue) || srt_getsockstate(socket) == SRTS_CONNECTED { continue }
                viewers.withLock { $0[index].ended = true }
                return
            }
            let now = ContinuousClock.now
            viewers.withLock { viewers in
                if let last = viewers[index].lastMessage { viewers[index].longestWait = max(viewers[index].longestWait, now - last) }
                viewers[index].lastMessage = now
                viewers[index].bytes += Int(received)
            }
        }
    }
}
