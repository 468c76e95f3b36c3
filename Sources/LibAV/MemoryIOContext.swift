import CFFmpeg
import NIOCore

/// Owns a write-only `AVIOContext` whose bytes land in a Swift `ByteBuffer` instead of a
/// file or socket. libav calls the write callback from inside `av_write_frame` & co., on
/// the calling thread, so no locking is needed; the context reaches the callback as an
/// unretained `Unmanaged` pointer, valid because this object outlives the `AVIOContext`.
final class MemoryIOContext {
    /// libav's staging buffer between the muxer and the callback. 32 KiB: large enough
    /// that a video frame costs a few callbacks, small enough to be irrelevant per muxer.
    static let stagingBufferSize = 32 * 1024

    /// The `AVIOContext`; `pointee.buffer` may be reallocated by libav, so it is freed
    /// through the context, never through the pointer first handed over.
    private(set) var context: UnsafeMutablePointer<AVIOContext>
    /// The bytes written since the last `take`.
    private var output: ByteBuffer
    /// The most bytes `output` may hold before writes fail with `AVERROR(ENOSPC)`: a
    /// caller that never takes its output must not grow memory without limit.
    let maximumBufferedBytes: Int
    private let allocator: ByteBufferAllocator

    init(maximumBufferedBytes: Int, allocator: ByteBufferAllocator) throws(AVError) {
        self.maximumBufferedBytes = maximumBufferedBytes
        self.allocator = allocator
        self.output = allocator.buffer(capacity: 0)
        guard let staging = av_malloc(Self.stagingBufferSize) else {
            throw .call(operation: "av_malloc", code: cffmpeg_averror_enomem())
        }
        // `self` is not fully initialised yet, so the opaque pointer is patched in below.
        guard let context = avio_alloc_context(
            staging.assumingMemoryBound(to: UInt8.self),
            Int32(Self.stagingBufferSize),
            1,  // write_flag
            nil,
            nil,  // read_packet
            { opaque, bytes, count in
                guard let opaque, let bytes, count >= 0 else {
                    return cffmpeg_averror_einval()
                }
                let io = Unmanaged<MemoryIOContext>.fromOpaque(opaque).takeUnretainedValue()
                return io.append(UnsafeRawBufferPointer(start: bytes, count: Int(count)))
            },
            nil  // seek: the output is a live stream; the muxers are configured not to seek
        ) else {
            av_free(staging)
            throw .call(operation: "avio_alloc_context", code: cffmpeg_averror_enomem())
        }
        self.context = context
        context.pointee.opaque = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        // avio_context_free does not free the buffer (it may not be the one we passed).
        av_freep(&context.pointee.buffer)
        var context: UnsafeMutablePointer<AVIOContext>? = self.context
        avio_context_free(&context)
    }

    /// The write callback's body: returns the count written or an AVERROR.
    private func append(_ bytes: UnsafeRawBufferPointer) -> Int32 {
        guard output.readableBytes + bytes.count <= maximumBufferedBytes else {
            return cffmpeg_averror_enospc()
        }
        output.writeBytes(bytes)
        return Int32(bytes.count)
    }

    /// Pushes libav's staging buffer through the callback.
    func flush() throws(AVError) {
        avio_flush(context)
        try AVError.check(context.pointee.error, "avio_flush")
    }

    /// The bytes written since the last take (after `flush`).
    func take() -> ByteBuffer {
        let taken = output
        output = allocator.buffer(capacity: 0)
        return taken
    }
}

@available(*, unavailable)
extension MemoryIOContext: Sendable {}
