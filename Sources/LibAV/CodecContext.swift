import CFFmpeg

/// Owns one opened `AVCodecContext`, the state every decoder and encoder here wraps, and
/// frees it in `deinit`. It exists so that allocating, configuring and opening a context,
/// freeing it when any step fails, and draining an encoder's packets are written once.
///
/// Not Sendable; used on the thread of the decoder or encoder that owns it.
final class CodecContext {
    let pointer: UnsafeMutablePointer<AVCodecContext>

    /// Allocates a context for `codec`, lets `configure` set its fields and options, and
    /// opens it. `name` names the codec in errors. The context is freed if any step throws.
    init(
        codec: UnsafePointer<AVCodec>,
        name: String,
        configure: (UnsafeMutablePointer<AVCodecContext>) throws(AVError) -> Void
    ) throws(AVError) {
        guard let context = avcodec_alloc_context3(codec) else {
            throw .call(operation: "avcodec_alloc_context3(\(name))", code: cffmpeg_averror_enomem())
        }
        do {
            try configure(context)
            try AVError.check(avcodec_open2(context, codec, nil), "avcodec_open2(\(name))")
        } catch {
            var owned: UnsafeMutablePointer<AVCodecContext>? = context
            avcodec_free_context(&owned)
            throw error
        }
        self.pointer = context
    }

    deinit {
        var owned: UnsafeMutablePointer<AVCodecContext>? = pointer
        avcodec_free_context(&owned)
    }

    /// An encoder's ready packets, each handed to `body` in `packet` and unreferenced
    /// afterwards; returns what `body` made of them (nil results are skipped). Stops at
    /// "needs more input" or "end of stream".
    func receivePackets<Output>(
        into packet: Packet,
        operation: String,
        _ body: (UnsafeMutablePointer<AVPacket>) throws(AVError) -> Output?
    ) throws(AVError) -> [Output] {
        var outputs: [Output] = []
        let target = packet.pointer
        while true {
            let code = avcodec_receive_packet(pointer, target)
            if code == cffmpeg_averror_eagain() || code == cffmpeg_averror_eof() {
                return outputs
            }
            try AVError.check(code, operation)
            defer { av_packet_unref(target) }
            if let output = try body(target) {
                outputs.append(output)
            }
        }
    }
}

@available(*, unavailable)
extension CodecContext: Sendable {}
