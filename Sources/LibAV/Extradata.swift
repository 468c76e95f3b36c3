import CFFmpeg
import NIOCore

/// Codec extradata (avcC, hvcC, AudioSpecificConfig) as libav wants it: allocated with
/// libav's allocator, zero-padded by `AV_INPUT_BUFFER_PADDING_SIZE`, owned afterwards by
/// whatever struct it is stored in (freed by `avformat_free_context` / `avcodec_free_context`).
enum Extradata {
    static func copy(_ bytes: ByteBuffer) throws(AVError) -> (pointer: UnsafeMutablePointer<UInt8>, size: Int32) {
        let count = bytes.readableBytes
        guard count <= Int(Int32.max) - Int(AV_INPUT_BUFFER_PADDING_SIZE),
              let extradata = av_mallocz(count + Int(AV_INPUT_BUFFER_PADDING_SIZE))
        else {
            throw .call(operation: "av_mallocz(extradata)", code: cffmpeg_averror_enomem())
        }
        bytes.withUnsafeReadableBytes { source in
            if let base = source.baseAddress {
                extradata.copyMemory(from: base, byteCount: count)
            }
        }
        return (extradata.assumingMemoryBound(to: UInt8.self), Int32(count))
    }
}
