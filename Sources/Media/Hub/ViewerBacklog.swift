import NIOCore

/// What a viewer connection has drained from its `HubSubscriber` and hands to its channel,
/// at most `sliceLength` packets at a time: the next slice once the socket has taken the last
/// (or at the next wake-up, if that comes first).
///
/// Why slices: NIO keeps every write in the channel's pending-writes ring until the socket
/// takes it, and the ring keeps its largest size for the life of the connection (about 48
/// bytes an entry). A joining viewer's replayed GOP is about 150 packets (2 s at 30 fps, with
/// its audio); written at once, it grew every viewer's ring to 256 entries, 12 KiB for as long
/// as it watched (docs/benchmarks.md, "Memory per viewer"). A slice at a time, the ring stays
/// at its first 16 entries, and a live burst (a few frames) is a single slice, written
/// exactly as before: one `writev` of shared buffers per wake.
public struct ViewerBacklog {
    /// The most writes handed to the channel before waiting for the socket to take them.
    /// The ring holds one entry fewer than its 16 before it doubles (NIO's `CircularBuffer`
    /// grows when it is full), and a viewer's control replies may join a slice: 8 leaves room.
    public static let sliceLength = 8

    /// One write: a whole burst's shared bytes (`HubBurst.mergedBytes`), or one frame.
    public enum Unit {
        case bytes(ByteBuffer)
        case packet(HubPacket)
    }

    private var items: [HubSubscriber.Item] = []
    /// The next item, and the next frame in it when it is written frame by frame.
    private var next = 0
    private var offset = 0
    /// The subscriber said its stream ended after these items.
    private var ended = false

    public init() {}

    /// What one `pump` did.
    public enum Outcome {
        /// Everything drained is with the channel; the subscriber wakes the connection again.
        case idle
        /// More is waiting: pump again when this future completes (it fails if the channel
        /// closes first).
        case sliceInFlight(EventLoopFuture<Void>)
        /// The stream ended and everything before its end is with the channel.
        case ended
    }

    /// Hands the backlog, refilled once from `subscriber` when it runs out, to `write`, one
    /// slice of `sliceLength` writes; the caller flushes afterwards. A burst the subscriber
    /// took whole is one write of its merged bytes in the subscriber's format; anything else
    /// is a write per frame. The last write of a slice with more behind it carries a
    /// promise, and the outcome carries its future.
    ///
    /// A subscriber wakes its consumer once per `drain()`: each pump that empties the backlog
    /// drains the subscriber again, so no wake-up is lost while slices are being written.
    ///
    /// A pump while a slice is still on its way (a wake-up: new frames came before the socket
    /// took the slice) hands over the next slice all the same. Waiting would hold a viewer
    /// whose socket stopped taking data below the channel's high-water mark for ever: it
    /// would never become unwritable, so its write-stall timeout would never start. A socket
    /// that keeps up takes each slice before the next wake-up, and the ring stays small.
    public mutating func pump(
        from subscriber: HubSubscriber,
        eventLoop: any EventLoop,
        write: (Unit, EventLoopPromise<Void>?) -> Void
    ) -> Outcome {
        var refilled = false
        while true {
            if next >= items.count {
                if ended { return .ended }
                guard !refilled else {
                    // Between wakes a viewer holds no frames (nor the memory of their array).
                    items = []
                    next = 0
                    return .idle
                }
                let batch = subscriber.drain()
                items = batch.items
                next = 0
                offset = 0
                ended = batch.ended
                refilled = true
                continue
            }
            var written = 0
            while written < Self.sliceLength, next < items.count {
                let unit = nextUnit(format: subscriber.format)
                written += 1
                if written == Self.sliceLength, next < items.count {
                    let promise = eventLoop.makePromise(of: Void.self)
                    write(unit, promise)
                    return .sliceInFlight(promise.futureResult)
                }
                write(unit, nil)
            }
        }
    }

    /// The next write, advancing past it.
    private mutating func nextUnit(format: OutputFormat?) -> Unit {
        switch items[next] {
        case .packet(let packet):
            next += 1
            return .packet(packet)
        case .burst(let burst, let from):
            if offset == 0, from == 0, let format, let bytes = burst.mergedBytes(for: format) {
                next += 1
                return .bytes(bytes)
            }
            let packet = burst.packets[from + offset]
            offset += 1
            if from + offset >= burst.packets.count {
                next += 1
                offset = 0
            }
            return .packet(packet)
        }
    }

    /// Queue entries drained but not yet wholly handed to the channel.
    public var pendingCount: Int { items.count - next }
}
