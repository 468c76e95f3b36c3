// libFuzzer target: the RTMP chunk stream decoder.
// Every message that decodes must re-encode, and the re-encoding must decode back to the
// same message (type, stream, timestamp, payload).
import CLibFuzzer
import Glibc
import NIOCore
import RTMP

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzChunkDecoder(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    var input = ByteBuffer(bytes: UnsafeBufferPointer(start: data, count: size))
    var decoder = ChunkDecoder(limits: ChunkLimits(maxMessageSize: 1 << 20, maxChunkSize: 65536, maxChunkStreams: 16, maxBufferedBytes: 4 << 20))
    let encoder = ChunkEncoder(chunkSize: 128)
    for _ in 0..<10_000 {
        guard let message = try? decoder.next(from: &input) else { break }
        var bytes = ByteBuffer()
        encoder.encode(message, into: &bytes)
        var again = ChunkDecoder()
        guard let decoded = try? again.next(from: &bytes) else {
            if MessageType(rawValue: message.typeID) == .setChunkSize { continue }  // may be out of range for a fresh decoder
            fatalError("re-encoded message did not decode: \(message)")
        }
        precondition(decoded.typeID == message.typeID && decoded.streamID == message.streamID
            && decoded.timestamp == message.timestamp && decoded.payload == message.payload,
            "round trip changed the message")
    }
    return 0
}

var arguments = CommandLine.argc
var argumentVector: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&arguments, &argumentVector) { data, size in fuzzChunkDecoder(data, size) })
