import Media
import NIOCore

/// Turns a publisher's `MediaFrame`s into bus messages: a `MediaBusFrameHeader` and the
/// FLV tag body, split into fragments when header + body exceed the bus's max payload.
///
/// One encoder per published rendition; it numbers frames consecutively within its epoch.
/// A value type with mutating state: confine it to the publisher's thread, or use
/// `MediaBusPublisher`, which holds it behind a lock.
public struct MediaBusFrameEncoder: Sendable {
    /// The epoch written into every header. Use a new one per publisher session so that
    /// receivers restart their sequence tracking.
    public let epoch: UInt32
    /// Whether the publication's timeline is its publisher's own (`MediaBusFrameHeader.hasOwnClock`).
    public let hasOwnClock: Bool
    /// The sequence number the next frame gets.
    public private(set) var nextSequence: UInt64
    /// The size of the largest message produced (header included).
    public let maxMessageBytes: Int
    /// Frames with a larger body are refused (`MediaBusFrameError.oversized`) rather than
    /// sent: receivers would drop them anyway (`MediaBusReassembler.maxFrameBytes`).
    public let maxFrameBytes: Int

    /// The smallest fragment body accepted; a smaller `maxMessageBytes` is raised to this
    /// plus the header, so a misconfigured limit costs efficiency instead of looping.
    static let minimumFragmentBody = 256

    /// - Parameters:
    ///   - epoch: see `epoch`.
    ///   - maxMessageBytes: usually `bus.maxPayload` (nats-server's default is 1 MiB).
    ///   - maxFrameBytes: default 16 MiB, the receivers' default bound: far above any sane
    ///     keyframe (a 4K intra frame at high quality is a few MiB).
    public init(epoch: UInt32, maxMessageBytes: Int, maxFrameBytes: Int = MediaBusReassembler.defaultMaxFrameBytes, firstSequence: UInt64 = 0, hasOwnClock: Bool = false) {
        self.epoch = epoch
        self.hasOwnClock = hasOwnClock
        self.maxMessageBytes = max(maxMessageBytes, MediaBusFrameHeader.size + Self.minimumFragmentBody)
        self.maxFrameBytes = min(maxFrameBytes, Int(UInt32.max))
        self.nextSequence = firstSequence
    }

    /// How many messages a body of `length` bytes takes.
    public func fragmentCount(forBodyLength length: Int) -> Int {
        let bodyPerMessage = maxMessageBytes - MediaBusFrameHeader.size
        return max(1, (length + bodyPerMessage - 1) / bodyPerMessage)
    }

    /// Encodes `frame` into its messages, in order. Throws `.oversized` for a frame
    /// above `maxFrameBytes`; the sequence number is then not used.
    ///
    /// The body is copied once, into each message next to its header: libnats takes one
    /// contiguous buffer per message.
    public mutating func encode(_ frame: MediaFrame, allocator: ByteBufferAllocator = ByteBufferAllocator()) throws(MediaBusFrameError) -> [ByteBuffer] {
        let length = frame.payload.readableBytes
        guard length <= maxFrameBytes else {
            throw .oversized(length: length, limit: maxFrameBytes)
        }
        let bodyPerMessage = maxMessageBytes - MediaBusFrameHeader.size
        let count = fragmentCount(forBodyLength: length)
        guard count <= Int(UInt16.max) else {
            throw .oversized(length: length, limit: bodyPerMessage * Int(UInt16.max))
        }
        let sequence = nextSequence
        nextSequence &+= 1
        var header = MediaBusFrameHeader(
            kind: frame.kind,
            isKeyframe: frame.isKeyframe,
            isSequenceHeader: frame.isSequenceHeader,
            epoch: epoch,
            sequence: sequence,
            timestamp: frame.timestamp,
            compositionTime: frame.compositionTime,
            fragmentIndex: 0,
            fragmentCount: UInt16(count),
            frameLength: UInt32(length)
        )
        header.isDiscontinuity = frame.isDiscontinuity
        header.hasOwnClock = hasOwnClock
        var messages: [ByteBuffer] = []
        messages.reserveCapacity(count)
        var body = frame.payload
        for index in 0..<count {
            header.fragmentIndex = UInt16(index)
            let sliceLength = min(bodyPerMessage, body.readableBytes)
            var message = allocator.buffer(capacity: MediaBusFrameHeader.size + sliceLength)
            header.write(into: &message)
            if let slice = body.readSlice(length: sliceLength) {
                message.writeImmutableBuffer(slice)
            }
            messages.append(message)
        }
        return messages
    }

    /// Uses up a sequence number without a message: the frame was not sent (nobody
    /// listened), and a receiver that appears later must see the gap.
    public mutating func skip() {
        nextSequence &+= 1
    }
}
