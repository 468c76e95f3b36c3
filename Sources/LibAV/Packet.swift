import CFFmpeg

/// Owns one `AVPacket`, reused for every frame a muxer writes: its data is (re)allocated by
/// `av_new_packet` per frame and released with `av_packet_unref` after the write.
final class Packet {
    let pointer: UnsafeMutablePointer<AVPacket>

    init() throws(AVError) {
        guard let pointer = av_packet_alloc() else {
            throw .call(operation: "av_packet_alloc", code: cffmpeg_averror_enomem())
        }
        self.pointer = pointer
    }

    deinit {
        var pointer: UnsafeMutablePointer<AVPacket>? = self.pointer
        av_packet_free(&pointer)
    }
}

@available(*, unavailable)
extension Packet: Sendable {}
