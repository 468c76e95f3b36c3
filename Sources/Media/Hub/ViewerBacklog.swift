import NIOCore

/// What a viewer connection has drained from its `HubSubscriber` and hands to its channel,
/// at most `sliceLength` packets at a time: the next slice once the socket has taken the last.
///
/// Why slices: NIO keeps every write in the channel's pending-writes ring until the socket
/// takes it, and the ring keeps its largest size for the life of the connection (about 48
/// bytes an entry). A joining viewer's replayed GOP is about 150 packets (2 s at 30 fps, with
/// its audio); written at once, it grew every viewer's ring to 256 entries, 12 KiB for as long
/// as it watched (docs/benchmarks.md, "Memory per viewer"). A slice at a time, the ring stays
/// at its first 16 entries, and a live burst (a few frames) is a single slice, written
/// exactly as before: one `writev` of shared buffers per wake.
public struct ViewerBacklog {
    /// The most packets handed to the channel before waiting for the socket to take them.
    public static let sliceLength = 16

    private var packets: [HubPacket] = []
    private var next = 0
    /// The subscriber said its stream ended after these packets.
    private var ended = false
    /// A slice with more behind it is on its way to the socket: wait for `sliceWritten()`.
    private var sliceInFlight = false

    public init() {}

    /// What one `pump` did.
    public enum Outcome {
        /// Everything drained is with the channel; the subscriber wakes the connection again.
        case idle
        /// More is waiting: call `sliceWritten()` and pump again when this future completes
        /// (it fails if the channel closes first).
        case sliceInFlight(EventLoopFuture<Void>)
        /// The stream ended and everything before its end is with the channel.
        case ended
        /// A pump while a slice is still on its way: nothing done.
        case waiting
    }

    /// Hands the backlog, refilled once from `subscriber` when it runs out, to `write`, one
    /// slice of `sliceLength` packets; the caller flushes afterwards. The last packet of a
    /// slice with more behind it is written with a promise, and the outcome carries its
    /// future.
    ///
    /// A subscriber wakes its consumer once per `drain()`: each pump that empties the backlog
    /// drains the subscriber again, so no wake-up is lost while slices are being written.
    public mutating func pump(
        from subscriber: HubSubscriber,
        eventLoop: any EventLoop,
        write: (HubPacket, EventLoopPromise<Void>?) -> Void
    ) -> Outcome {
        guard !sliceInFlight else { return .waiting }
        var refilled = false
        while true {
            if next >= packets.count {
                if ended { return .ended }
                guard !refilled else {
                    // Between wakes a viewer holds no packets (nor the memory of their array).
                    packets = []
                    next = 0
                    return .idle
                }
                let batch = subscriber.drain()
                packets = batch.packets
                next = 0
                ended = batch.ended
                refilled = true
                continue
            }
            let end = min(next + Self.sliceLength, packets.count)
            let more = end < packets.count
            var promise: EventLoopPromise<Void>?
            for index in next..<end {
                if more, index == end - 1 {
                    promise = eventLoop.makePromise(of: Void.self)
                }
                write(packets[index], promise)
            }
            next = end
            if let promise {
                sliceInFlight = true
                return .sliceInFlight(promise.futureResult)
            }
        }
    }

    /// The slice of the last `.sliceInFlight` is with the socket (or the channel is gone).
    public mutating func sliceWritten() {
        sliceInFlight = false
    }

    /// Packets drained but not yet handed to the channel.
    public var pendingCount: Int { packets.count - next }
}
