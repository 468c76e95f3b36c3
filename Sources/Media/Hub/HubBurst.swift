import NIOCore

/// What a hub took in between two wake-ups of its viewers: one entry in every viewer's
/// queue, instead of one per frame per viewer.
///
/// Handing a burst over costs a viewer one lock, one reference and one append, whatever the
/// frames in it (a 100 ms burst of a 600 kbit/s stream is about eight: three video frames
/// and five AAC frames). For each output format that has viewers, the burst also keeps its
/// frames' shared bytes in one buffer, made once per stream: a viewer that takes the whole
/// burst writes that one buffer, one iovec and one pending write instead of eight. The
/// bytes are those of the frames, in order, so what reaches the socket is unchanged.
public final class HubBurst: Sendable {
    public let packets: [HubPacket]
    /// The hub's sequence number of `packets[0]` (a viewer that joined during the burst
    /// takes only what came after its join, see `HubSubscriber.deliver`).
    let firstSequence: UInt64
    /// Per `OutputFormat` (by raw value): the packets' bytes one after another, or nil where
    /// nobody reads the format (or a packet predates its first reader).
    private let merged: [ByteBuffer?]
    /// Per `OutputFormat` (by raw value), then for raw frames: what the burst costs against
    /// a subscriber's queue bound, as the sum of its packets' costs.
    private let costs: [Int]

    init(packets: [HubPacket], firstSequence: UInt64, demand: [Int], allocator: ByteBufferAllocator) {
        self.packets = packets
        self.firstSequence = firstSequence
        let formats = OutputFormat.allCases
        var costs = [Int](repeating: 0, count: formats.count + 1)
        var merged = [ByteBuffer?](repeating: nil, count: formats.count)
        for format in formats {
            var bytes = 0
            var complete = true
            for packet in packets {
                bytes += packet.cost(format: format)
                if packet.bytes(for: format) == nil { complete = false }
            }
            costs[format.rawValue] = bytes
            guard complete, demand.indices.contains(format.rawValue), demand[format.rawValue] > 0, !packets.isEmpty else { continue }
            if packets.count == 1 {
                merged[format.rawValue] = packets[0].bytes(for: format)
            } else {
                var buffer = allocator.buffer(capacity: bytes)
                for packet in packets {
                    if let bytes = packet.bytes(for: format) { buffer.writeImmutableBuffer(bytes) }
                }
                merged[format.rawValue] = buffer
            }
        }
        costs[formats.count] = packets.reduce(0) { $0 + $1.cost(format: nil) }
        self.merged = merged
        self.costs = costs
    }

    /// The whole burst's bytes in `format`, in one buffer, if the hub made them.
    public func mergedBytes(for format: OutputFormat) -> ByteBuffer? {
        merged[format.rawValue]
    }

    /// What the burst costs a subscriber of `format` (nil: raw frames).
    func cost(format: OutputFormat?) -> Int {
        costs[format?.rawValue ?? OutputFormat.allCases.count]
    }
}
