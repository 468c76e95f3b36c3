import Media
import NIOCore

/// The answer to "what does a viewer joining now need first?": a stream's metadata,
/// configuration records and cached GOP, fetched with one bus request, so that a relay
/// (or a transcoder) joining a stream late can start its first viewer at once instead of
/// waiting up to a GOP for the next keyframe.
///
/// The request goes to `gop.<app>.<name>.<rendition>`, answered by the node that publishes
/// the rendition. The reply is a count and then each frame as one complete media bus
/// message (`MediaBusFrameHeader` + body, never fragmented), each prefixed by its length:
///
/// ```
/// UInt32 count | (UInt32 length | message) × count
/// ```
///
/// A GOP larger than the bus's max payload is not split: the reply then carries only the
/// metadata and configuration records, and the joiner starts at the next live keyframe.
public enum MediaBusGOP {
    /// The request subject for a rendition.
    public static func subject(for media: MediaBusSubject) -> String {
        "gop" + media.subject.dropFirst("media".count)
    }

    /// The subject on which a publisher announces that a rendition ended (the payload: its
    /// epoch, 4 bytes big-endian; empty from an older node).
    public static func endSubject(for media: MediaBusSubject) -> String {
        "end" + media.subject.dropFirst("media".count)
    }

    /// The reply for `frames` (in hub order), within `maxBytes`.
    public static func encode(_ frames: [MediaFrame], maxBytes: Int, allocator: ByteBufferAllocator = ByteBufferAllocator()) -> ByteBuffer {
        let full = encodeAll(frames, allocator: allocator)
        if full.readableBytes <= maxBytes {
            return full
        }
        let configuration = frames.filter { $0.isSequenceHeader || $0.kind == .script }
        let reduced = encodeAll(configuration, allocator: allocator)
        return reduced.readableBytes <= maxBytes ? reduced : encodeAll([], allocator: allocator)
    }

    /// The frames of a reply. Throws for a malformed reply (bounds-checked throughout).
    public static func decode(_ reply: ByteBuffer, maxFrameBytes: Int = MediaBusReassembler.defaultMaxFrameBytes) throws(MediaBusFrameError) -> [MediaFrame] {
        var buffer = reply
        guard let count = buffer.readInteger(as: UInt32.self) else {
            throw .truncated(needed: 4, available: buffer.readableBytes)
        }
        // Each entry takes at least its length prefix and a header.
        guard Int(count) <= buffer.readableBytes / (4 + MediaBusFrameHeader.size) else {
            throw .truncated(needed: Int(count) * (4 + MediaBusFrameHeader.size), available: buffer.readableBytes)
        }
        var frames: [MediaFrame] = []
        frames.reserveCapacity(Int(count))
        // The messages are numbered consecutively from a configuration record or keyframe,
        // so the reassembler's gap policy passes every one of them.
        var reassembler = MediaBusReassembler(maxFrameBytes: maxFrameBytes)
        for _ in 0..<count {
            guard let length = buffer.readInteger(as: UInt32.self) else {
                throw .truncated(needed: 4, available: buffer.readableBytes)
            }
            guard let message = buffer.readSlice(length: Int(length)) else {
                throw .truncated(needed: Int(length), available: buffer.readableBytes)
            }
            if let frame = try reassembler.receive(message) {
                frames.append(frame)
            }
        }
        return frames
    }

    private static func encodeAll(_ frames: [MediaFrame], allocator: ByteBufferAllocator) -> ByteBuffer {
        var encoder = MediaBusFrameEncoder(epoch: 0, maxMessageBytes: Int(UInt32.max))
        var messages: [ByteBuffer] = []
        for frame in frames {
            guard let encoded = try? encoder.encode(frame, allocator: allocator), encoded.count == 1 else { continue }
            messages.append(encoded[0])
        }
        var buffer = allocator.buffer(capacity: 4 + messages.reduce(0) { $0 + 4 + $1.readableBytes })
        buffer.writeInteger(UInt32(messages.count))
        for message in messages {
            buffer.writeInteger(UInt32(message.readableBytes))
            buffer.writeImmutableBuffer(message)
        }
        return buffer
    }
}
