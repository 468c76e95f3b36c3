import Media
import NIOCore

/// Media frames with recognisable payloads.
enum Frames {
    /// A video frame: an AVC NALU tag header (`0x17`/`0x27`, packet type 1, composition
    /// time `composition`) then `size` bytes of a pattern seeded by `seed`.
    static func video(timestamp: Int64, keyframe: Bool, size: Int = 64, composition: Int32 = 40, seed: UInt8 = 0) -> MediaFrame {
        var payload = ByteBuffer()
        payload.writeInteger(UInt8(keyframe ? 0x17 : 0x27))
        payload.writeInteger(UInt8(1))
        payload.writeInteger(UInt8(truncatingIfNeeded: composition >> 16))
        payload.writeInteger(UInt16(truncatingIfNeeded: composition))
        payload.writeBytes((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) })
        return MediaFrame(kind: .video, timestamp: timestamp, isKeyframe: keyframe, payload: payload)
    }

    /// A real one (libx264, High 3.1, 1280x720): the bus parses configuration records, as RTMP ingest does.
    static func videoSequenceHeader(timestamp: Int64 = 0) -> MediaFrame {
        let hex = "17000000000164001fffe1001a6764001facd9405005bb0110000003001000000303c0f183196001000668ebe3cb22c0fdf8f800"
        let bytes = stride(from: 0, to: hex.count, by: 2).map { offset -> UInt8 in
            let start = hex.index(hex.startIndex, offsetBy: offset)
            return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16) ?? 0
        }
        let payload = ByteBuffer(bytes: bytes)
        return MediaFrame(kind: .video, timestamp: timestamp, isKeyframe: true, isSequenceHeader: true, payload: payload)
    }

    static func audio(timestamp: Int64, size: Int = 32) -> MediaFrame {
        var payload = ByteBuffer(bytes: [0xAF, 0x01])
        payload.writeBytes((0..<size).map { UInt8(truncatingIfNeeded: $0 &+ Int(timestamp)) })
        return MediaFrame(kind: .audio, timestamp: timestamp, payload: payload)
    }

    static func script(timestamp: Int64 = 0) -> MediaFrame {
        MediaFrame(kind: .script, timestamp: timestamp, payload: ByteBuffer(bytes: [0x02, 0x00, 0x0A] + Array("onMetaData".utf8)))
    }
}

/// The fields that must survive the bus, for `#expect(==)`.
struct FrameSnapshot: Equatable, Sendable {
    var kind: MediaKind
    var timestamp: Int64
    var isKeyframe: Bool
    var isSequenceHeader: Bool
    var isDiscontinuity: Bool
    var payload: [UInt8]

    init(_ frame: MediaFrame) {
        kind = frame.kind
        timestamp = frame.timestamp
        isKeyframe = frame.isKeyframe
        isSequenceHeader = frame.isSequenceHeader
        isDiscontinuity = frame.isDiscontinuity
        payload = Array(frame.payload.readableBytesView)
    }
}
