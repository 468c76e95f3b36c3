import NIOCore

/// Turns a frame into the bytes one output format puts on the wire (an FLV tag, a run of
/// RTMP chunks, ...).
///
/// A hub calls each serializer at most once per frame and hands the same `ByteBuffer` to
/// every subscriber of that format: this is what makes fan-out cost a reference count per
/// viewer instead of a copy. Serializers must therefore produce bytes that are identical
/// for every viewer (absolute timestamps, one message stream id).
public protocol FrameSerializer: Sendable {
    /// The format this serializer writes: a hub keeps one serializer per format.
    var format: OutputFormat { get }
    func serialize(_ frame: MediaFrame, allocator: ByteBufferAllocator) -> ByteBuffer
}
