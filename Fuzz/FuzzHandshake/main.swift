// libFuzzer target: the server handshake state machine fed arbitrary client bytes.
import CLibFuzzer
import Glibc
import NIOCore
import RTMP

/// Deterministic randomness so a crash replays.
struct FixedRandom: RandomNumberGenerator, Sendable {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        return state
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzHandshake(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    var input = ByteBuffer(bytes: UnsafeBufferPointer(start: data, count: size))
    var handshake = ServerHandshake(random: FixedRandom())
    for _ in 0..<4 {
        guard let action = try? handshake.feed(&input) else { break }
        if action == .needMoreData || action == .completed { break }
    }
    return 0
}

var arguments = CommandLine.argc
var argumentVector: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&arguments, &argumentVector) { data, size in fuzzHandshake(data, size) })
