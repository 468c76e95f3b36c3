import NIOCore

/// Serialises a frame once into a complete FLV tag (header, body, PreviousTagSize), the
/// unit every HTTP-FLV viewer receives.
public struct FLVTagSerializer: FrameSerializer {
    public init() {}

    public var format: OutputFormat { .flvTag }

    public func serialize(_ frame: MediaFrame, allocator: ByteBufferAllocator) -> ByteBuffer {
        FLVTagEncoder.encode(frame, allocator: allocator)
    }
}
