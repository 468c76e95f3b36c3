import NIOCore
import Testing

@testable import RTMP

/// A named chunk stream byte vector and the messages it decodes to. `encodable` rows are also
/// exactly what ``ChunkEncoder`` produces (type 0 header, type 3 continuations).
struct ChunkVector: Sendable, CustomTestStringConvertible {
    let name: String
    let bytes: [UInt8]
    let messages: [RTMPMessage]
    let encodable: Bool
    /// The incoming chunk size after decoding the whole vector.
    let finalChunkSize: Int
    var testDescription: String { self.name }

    init(_ name: String, bytes: [UInt8], messages: [RTMPMessage], encodable: Bool, finalChunkSize: Int = 128) {
        self.name = name
        self.bytes = bytes
        self.messages = messages
        self.encodable = encodable
        self.finalChunkSize = finalChunkSize
    }
}

func message(_ typeID: UInt8, stream: UInt32 = 1, ts: UInt32, csid: UInt32, _ payload: [UInt8]) -> RTMPMessage {
    RTMPMessage(typeID: typeID, streamID: stream, timestamp: ts, chunkStreamID: csid, payload: ByteBuffer(payload))
}

/// A type 0 message header (without basic header).
func header0(ts: UInt32, length: Int, type: UInt8, stream: UInt32 = 1) -> [UInt8] {
    Wire.u24(ts) + Wire.u24(UInt32(length)) + [type] + Wire.u32le(stream)
}

extension ChunkVector {
    static let payload300 = Wire.pattern(300)
    static let payload200 = Wire.pattern(200, start: 7)

    static let all: [ChunkVector] = [
        ChunkVector(
            "fmt0 csid 3 single chunk",
            bytes: [0x03] + header0(ts: 1000, length: 4, type: 20, stream: 0) + [1, 2, 3, 4],
            messages: [message(20, stream: 0, ts: 1000, csid: 3, [1, 2, 3, 4])],
            encodable: true
        ),
        ChunkVector(
            "csid 2, smallest one-byte id",
            bytes: [0x02] + header0(ts: 0, length: 4, type: 5, stream: 0) + Wire.u32(2_500_000),
            messages: [message(5, stream: 0, ts: 0, csid: 2, Wire.u32(2_500_000))],
            encodable: true
        ),
        ChunkVector(
            "csid 63, largest one-byte id",
            bytes: [0x3F] + header0(ts: 5, length: 1, type: 8) + [0xAF],
            messages: [message(8, ts: 5, csid: 63, [0xAF])],
            encodable: true
        ),
        ChunkVector(
            "csid 64, smallest two-byte id",
            bytes: [0x00, 0x00] + header0(ts: 5, length: 1, type: 8) + [0xAF],
            messages: [message(8, ts: 5, csid: 64, [0xAF])],
            encodable: true
        ),
        ChunkVector(
            "csid 319, largest two-byte id",
            bytes: [0x00, 0xFF] + header0(ts: 5, length: 1, type: 9) + [0x17],
            messages: [message(9, ts: 5, csid: 319, [0x17])],
            encodable: true
        ),
        ChunkVector(
            "csid 320, smallest three-byte id",
            bytes: [0x01, 0x00, 0x01] + header0(ts: 5, length: 1, type: 9) + [0x17],
            messages: [message(9, ts: 5, csid: 320, [0x17])],
            encodable: true
        ),
        ChunkVector(
            "csid 65599, largest three-byte id",
            bytes: [0x01, 0xFF, 0xFF] + header0(ts: 5, length: 1, type: 9) + [0x17],
            messages: [message(9, ts: 5, csid: 65599, [0x17])],
            encodable: true
        ),
        ChunkVector(
            "message stream id is little-endian",
            bytes: [0x04] + Wire.u24(0) + Wire.u24(1) + [8] + [0x04, 0x03, 0x02, 0x01] + [0xAF],
            messages: [message(8, stream: 0x0102_0304, ts: 0, csid: 4, [0xAF])],
            encodable: true
        ),
        ChunkVector(
            "message split across three chunks at chunk size 128",
            bytes: [0x06] + header0(ts: 40, length: 300, type: 9) + Array(payload300[0..<128]) + [0xC6]
                + Array(payload300[128..<256]) + [0xC6] + Array(payload300[256...]),
            messages: [message(9, ts: 40, csid: 6, payload300)],
            encodable: true
        ),
        ChunkVector(
            "split message on two-byte csid 100",
            bytes: [0x00, 36] + header0(ts: 40, length: 200, type: 9) + Array(payload200[0..<128]) + [0xC0, 36]
                + Array(payload200[128...]),
            messages: [message(9, ts: 40, csid: 100, payload200)],
            encodable: true
        ),
        ChunkVector(
            "split message on three-byte csid 400",
            bytes: [0x01, 0x50, 0x01] + header0(ts: 40, length: 200, type: 9) + Array(payload200[0..<128])
                + [0xC1, 0x50, 0x01] + Array(payload200[128...]),
            messages: [message(9, ts: 40, csid: 400, payload200)],
            encodable: true
        ),
        ChunkVector(
            "fmt0 extended timestamp",
            bytes: [0x04] + header0(ts: 0xFFFFFF, length: 2, type: 8) + Wire.u32(0x0100_0000) + [0xAF, 0x01],
            messages: [message(8, ts: 0x0100_0000, csid: 4, [0xAF, 0x01])],
            encodable: true
        ),
        ChunkVector(
            "extended timestamp 0xFFFFFF repeated on fmt3 continuation (librtmp, ffmpeg, OBS)",
            bytes: [0x06] + header0(ts: 0xFFFFFF, length: 200, type: 9) + Wire.u32(0xFFFFFF) + Array(payload200[0..<128])
                + [0xC6] + Wire.u32(0xFFFFFF) + Array(payload200[128...]),
            messages: [message(9, ts: 0xFFFFFF, csid: 6, payload200)],
            encodable: true
        ),
        ChunkVector(
            "extended timestamp not repeated on fmt3 continuation",
            bytes: [0x06] + header0(ts: 0xFFFFFF, length: 200, type: 9) + Wire.u32(0x1234_5678) + Array(payload200[0..<128])
                + [0xC6] + Array(payload200[128...]),
            messages: [message(9, ts: 0x1234_5678, csid: 6, payload200)],
            encodable: false
        ),
        ChunkVector(
            "fmt1 adds delta and changes length and type",
            bytes: [0x04] + header0(ts: 1000, length: 2, type: 8) + [0xAF, 0x00]
                + [0x44] + Wire.u24(20) + Wire.u24(3) + [9] + [0x17, 0x01, 0x00],
            messages: [message(8, ts: 1000, csid: 4, [0xAF, 0x00]), message(9, ts: 1020, csid: 4, [0x17, 0x01, 0x00])],
            encodable: false
        ),
        ChunkVector(
            "fmt2 adds delta, keeps length and type",
            bytes: [0x04] + header0(ts: 1000, length: 2, type: 8) + [0xAF, 0x00] + [0x84] + Wire.u24(23) + [0xAF, 0x01],
            messages: [message(8, ts: 1000, csid: 4, [0xAF, 0x00]), message(8, ts: 1023, csid: 4, [0xAF, 0x01])],
            encodable: false
        ),
        ChunkVector(
            "fmt3 new messages repeat the fmt2 delta (spec 5.3.2.1)",
            bytes: [0x04] + header0(ts: 1000, length: 1, type: 8) + [1] + [0x84] + Wire.u24(20) + [2] + [0xC4] + [3] + [0xC4] + [4],
            messages: [
                message(8, ts: 1000, csid: 4, [1]), message(8, ts: 1020, csid: 4, [2]),
                message(8, ts: 1040, csid: 4, [3]), message(8, ts: 1060, csid: 4, [4]),
            ],
            encodable: false
        ),
        ChunkVector(
            "fmt3 new message after fmt0 uses the fmt0 timestamp as delta (ffmpeg writer)",
            bytes: [0x04] + header0(ts: 40, length: 1, type: 8) + [1] + [0xC4] + [2],
            messages: [message(8, ts: 40, csid: 4, [1]), message(8, ts: 80, csid: 4, [2])],
            encodable: false
        ),
        ChunkVector(
            "fmt1 with extended delta",
            bytes: [0x04] + header0(ts: 10, length: 1, type: 8) + [1]
                + [0x44] + Wire.u24(0xFFFFFF) + Wire.u24(1) + [8] + Wire.u32(0x0100_0000) + [2],
            messages: [message(8, ts: 10, csid: 4, [1]), message(8, ts: 0x0100_000A, csid: 4, [2])],
            encodable: false
        ),
        ChunkVector(
            "fmt3 new message carries the extended delta again",
            bytes: [0x04] + header0(ts: 10, length: 1, type: 8) + [1]
                + [0x84] + Wire.u24(0xFFFFFF) + Wire.u32(0x0100_0000) + [2]
                + [0xC4] + Wire.u32(0x0100_0000) + [3],
            messages: [
                message(8, ts: 10, csid: 4, [1]), message(8, ts: 0x0100_000A, csid: 4, [2]),
                message(8, ts: 0x0200_000A, csid: 4, [3]),
            ],
            encodable: false
        ),
        ChunkVector(
            "interleaved audio and video on different chunk streams",
            bytes: [0x04] + header0(ts: 100, length: 200, type: 8) + Array(payload200[0..<128])
                + [0x06] + header0(ts: 90, length: 300, type: 9) + Array(payload300[0..<128])
                + [0xC4] + Array(payload200[128...])
                + [0xC6] + Array(payload300[128..<256])
                + [0xC6] + Array(payload300[256...]),
            messages: [message(8, ts: 100, csid: 4, payload200), message(9, ts: 90, csid: 6, payload300)],
            encodable: false
        ),
        ChunkVector(
            "set chunk size applies to the following chunks",
            bytes: [0x02] + header0(ts: 0, length: 4, type: 1, stream: 0) + Wire.u32(256)
                + [0x06] + header0(ts: 0, length: 300, type: 9) + Array(payload300[0..<256]) + [0xC6] + Array(payload300[256...]),
            messages: [message(1, stream: 0, ts: 0, csid: 2, Wire.u32(256)), message(9, ts: 0, csid: 6, payload300)],
            encodable: true,
            finalChunkSize: 256
        ),
        ChunkVector(
            "set chunk size between two chunks of another stream's message",
            bytes: [0x06] + header0(ts: 0, length: 300, type: 9) + Array(payload300[0..<128])
                + [0x02] + header0(ts: 0, length: 4, type: 1, stream: 0) + Wire.u32(4096)
                + [0xC6] + Array(payload300[128...]),
            messages: [message(1, stream: 0, ts: 0, csid: 2, Wire.u32(4096)), message(9, ts: 0, csid: 6, payload300)],
            encodable: false,
            finalChunkSize: 4096
        ),
        ChunkVector(
            "abort discards the partial message",
            bytes: [0x06] + header0(ts: 0, length: 300, type: 9) + Array(payload300[0..<128])
                + [0x02] + header0(ts: 0, length: 4, type: 2, stream: 0) + Wire.u32(6)
                + [0x06] + header0(ts: 33, length: 2, type: 9) + [0x27, 0x01],
            messages: [message(2, stream: 0, ts: 0, csid: 2, Wire.u32(6)), message(9, ts: 33, csid: 6, [0x27, 0x01])],
            encodable: false
        ),
        ChunkVector(
            "new fmt0 header mid-message replaces the partial message",
            bytes: [0x06] + header0(ts: 0, length: 300, type: 9) + Array(payload300[0..<128])
                + [0x06] + header0(ts: 33, length: 2, type: 9) + [0x27, 0x01],
            messages: [message(9, ts: 33, csid: 6, [0x27, 0x01])],
            encodable: false
        ),
        // librtmp (and so LFLiveKit and the SDKs derived from it) sends the first packet on a
        // channel with a type 1 header when the application asks for RTMP_PACKET_SIZE_MEDIUM.
        // These rows depend on a fresh chunk stream, so the shuffling verifier skips them.
        ChunkVector(
            "librtmp: data message opens a chunk stream with fmt1, stream id 0, delta is absolute",
            bytes: [0x45] + Wire.u24(1000) + Wire.u24(4) + [18] + [1, 2, 3, 4],
            messages: [message(18, stream: 0, ts: 1000, csid: 5, [1, 2, 3, 4])],
            encodable: false
        ),
        ChunkVector(
            "librtmp: audio opens a chunk stream with fmt1 on the publishing stream, then fmt1 and fmt2 deltas",
            bytes: [0x44] + Wire.u24(40) + Wire.u24(2) + [8] + [0xAF, 0x01]
                + [0x44] + Wire.u24(23) + Wire.u24(3) + [8] + [0xAF, 0x01, 0x02]
                + [0x84] + Wire.u24(23) + [0xAF, 0x01, 0x03],
            messages: [
                message(8, stream: 1, ts: 40, csid: 4, [0xAF, 0x01]),
                message(8, stream: 1, ts: 63, csid: 4, [0xAF, 0x01, 0x02]),
                message(8, stream: 1, ts: 86, csid: 4, [0xAF, 0x01, 0x03]),
            ],
            encodable: false
        ),
        ChunkVector(
            "librtmp: one fmt1 channel carries data then video, each with its own stream id",
            bytes: [0x46] + Wire.u24(0) + Wire.u24(2) + [18] + [0x02, 0x00]
                + [0x46] + Wire.u24(33) + Wire.u24(2) + [9] + [0x17, 0x00],
            messages: [message(18, stream: 0, ts: 0, csid: 6, [0x02, 0x00]), message(9, stream: 1, ts: 33, csid: 6, [0x17, 0x00])],
            encodable: false
        ),
        ChunkVector(
            "librtmp: fmt1 first with an extended timestamp repeated on fmt3 continuations",
            bytes: [0x46] + Wire.u24(0xFFFFFF) + Wire.u24(300) + [9] + Wire.u32(0x0100_0000) + Array(payload300[0..<128])
                + [0xC6] + Wire.u32(0x0100_0000) + Array(payload300[128..<256])
                + [0xC6] + Wire.u32(0x0100_0000) + Array(payload300[256...]),
            messages: [message(9, stream: 1, ts: 0x0100_0000, csid: 6, payload300)],
            encodable: false
        ),
        ChunkVector(
            "librtmp: fmt0 after a fmt1 start takes the stream id from the header again",
            bytes: [0x45] + Wire.u24(10) + Wire.u24(1) + [8] + [0xAF]
                + [0x05] + header0(ts: 20, length: 1, type: 8, stream: 7) + [0xAF]
                + [0x45] + Wire.u24(5) + Wire.u24(1) + [8] + [0xAE],
            messages: [message(8, stream: 1, ts: 10, csid: 5, [0xAF]), message(8, stream: 7, ts: 20, csid: 5, [0xAF]), message(8, stream: 7, ts: 25, csid: 5, [0xAE])],
            encodable: false
        ),
        ChunkVector(
            "zero-length message",
            bytes: [0x05] + header0(ts: 7, length: 0, type: 18),
            messages: [message(18, ts: 7, csid: 5, [])],
            encodable: true
        ),
    ]
}
