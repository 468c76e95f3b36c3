import Media
import NIOCore

/// The legacy FLV tag bodies that LibAV's producers (the encoders, the TS demuxer) give the
/// hub, written in one place: an AVC sequence header (`0x17 0x00` + SI24 0 + the
/// AVCDecoderConfigurationRecord), AVC coded frames (`0x17`/`0x27 0x01` + SI24 composition
/// time + length-prefixed NAL units), the Enhanced RTMP HEVC equivalents, an AAC sequence header (`0xAF 0x00` +
/// AudioSpecificConfig) and raw AAC frames (`0xAF 0x01` + the frame).
enum FLVPayload {
    /// The AVC sequence header frame at `timestamp`.
    static func avcSequenceHeader(_ record: ByteBuffer, timestamp: Int64, allocator: ByteBufferAllocator) -> MediaFrame {
        var payload = allocator.buffer(capacity: 5 + record.readableBytes)
        payload.writeBytes([0x17, 0x00, 0x00, 0x00, 0x00])
        payload.writeImmutableBuffer(record)
        let header = VideoTagHeader(frameType: .keyframe, codec: .avc, packetType: .sequenceStart, isEnhanced: false, compositionTime: 0, headerLength: 5)
        return MediaFrame(timestamp: timestamp, video: header, payload: payload)
    }

    /// A buffer holding a coded AVC frame's 5-byte tag header; the NAL units follow. The
    /// composition time is clamped to SI24.
    static func avcCodedFrameStart(isKeyframe: Bool, compositionTime: Int64, bodyCapacity: Int, allocator: ByteBufferAllocator) -> (payload: ByteBuffer, header: VideoTagHeader) {
        let composition = Int32(clamping: max(-0x80_0000, min(0x7F_FFFF, compositionTime)))
        var payload = allocator.buffer(capacity: bodyCapacity + 5)
        payload.writeInteger(UInt8(isKeyframe ? 0x17 : 0x27))
        payload.writeInteger(UInt8(0x01))
        payload.writeInteger(UInt8(truncatingIfNeeded: composition >> 16))
        payload.writeInteger(UInt16(truncatingIfNeeded: composition))
        let header = VideoTagHeader(
            frameType: isKeyframe ? .keyframe : .interframe, codec: .avc, packetType: .codedFrames,
            isEnhanced: false, compositionTime: composition, headerLength: 5
        )
        return (payload, header)
    }

    /// The Enhanced RTMP HEVC SequenceStart at `timestamp`: `0x90 'hvc1'` + the hvcC.
    static func hevcSequenceStart(_ record: ByteBuffer, timestamp: Int64, allocator: ByteBufferAllocator) -> MediaFrame {
        var payload = allocator.buffer(capacity: 5 + record.readableBytes)
        payload.writeInteger(UInt8(0x90))
        payload.writeInteger(VideoCodec.hevc.fourCC)
        payload.writeImmutableBuffer(record)
        let header = VideoTagHeader(frameType: .keyframe, codec: .hevc, packetType: .sequenceStart, isEnhanced: true, compositionTime: 0, headerLength: 5)
        return MediaFrame(timestamp: timestamp, video: header, payload: payload)
    }

    /// A buffer holding a coded HEVC frame's 8-byte Enhanced RTMP header (`0x91`/`0xA1`
    /// `'hvc1'` + SI24 composition time); the NAL units follow.
    static func hevcCodedFrameStart(isKeyframe: Bool, compositionTime: Int64, bodyCapacity: Int, allocator: ByteBufferAllocator) -> (payload: ByteBuffer, header: VideoTagHeader) {
        let composition = Int32(clamping: max(-0x80_0000, min(0x7F_FFFF, compositionTime)))
        var payload = allocator.buffer(capacity: bodyCapacity + 8)
        payload.writeInteger(UInt8(isKeyframe ? 0x91 : 0xA1))
        payload.writeInteger(VideoCodec.hevc.fourCC)
        payload.writeInteger(UInt8(truncatingIfNeeded: composition >> 16))
        payload.writeInteger(UInt16(truncatingIfNeeded: composition))
        let header = VideoTagHeader(
            frameType: isKeyframe ? .keyframe : .interframe, codec: .hevc, packetType: .codedFrames,
            isEnhanced: true, compositionTime: composition, headerLength: 8
        )
        return (payload, header)
    }

    /// The AAC sequence header frame at `timestamp`.
    static func aacSequenceHeader(_ audioSpecificConfig: some Sequence<UInt8>, timestamp: Int64, allocator: ByteBufferAllocator) -> MediaFrame {
        var payload = allocator.buffer(capacity: 8)
        payload.writeBytes([0xAF, 0x00])
        payload.writeBytes(audioSpecificConfig)
        return MediaFrame(timestamp: timestamp, audio: .legacyAAC(.sequenceHeader), payload: payload)
    }

    /// An Enhanced RTMP Opus tag at `timestamp`: `[ExHeader | packetType] 'Opus'`, then
    /// `body` (the OpusHead of a SequenceStart, or a packet).
    static func opus(_ packetType: AudioTagHeader.PacketType, _ body: UnsafeRawBufferPointer, timestamp: Int64, allocator: ByteBufferAllocator) -> MediaFrame {
        var payload = allocator.buffer(capacity: 5 + body.count)
        payload.writeInteger(AudioTagHeader.SoundFormat.exHeader.rawValue << 4 | packetType.rawValue)
        payload.writeInteger(AudioCodec.opus.fourCC)
        payload.writeBytes(body)
        return MediaFrame(timestamp: timestamp, audio: .enhanced(.opus, packetType), payload: payload)
    }

    /// A raw AAC frame at `timestamp`.
    static func aacFrame(_ bytes: UnsafeRawBufferPointer, timestamp: Int64, allocator: ByteBufferAllocator) -> MediaFrame {
        var payload = allocator.buffer(capacity: 2 + bytes.count)
        payload.writeBytes([0xAF, 0x01])
        payload.writeBytes(bytes)
        return MediaFrame(timestamp: timestamp, audio: .legacyAAC(.raw), payload: payload)
    }
}
