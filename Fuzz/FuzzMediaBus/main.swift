// libFuzzer target: what a node reads from the bus. The input is cut into messages by
// 2-byte length prefixes and fed to a media reassembler (with both join policies), and is
// also parsed whole as a GOP reply. Nothing may trap, and a reassembled frame's body must
// be exactly as long as its header announced.
import CLibFuzzer
import Cluster
import Glibc
import Media
import NIOCore

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzMediaBus(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let input = ByteBuffer(bytes: UnsafeBufferPointer(start: data, count: size))
    _ = try? MediaBusGOP.decode(input, maxFrameBytes: 1 << 16)
    var reassembler = MediaBusReassembler(maxFrameBytes: 1 << 16, joinsAtSyncPoint: data[0] & 1 == 0)
    var buffer = input
    for _ in 0..<10_000 {
        guard let length = buffer.readInteger(as: UInt16.self), let message = buffer.readSlice(length: min(Int(length), buffer.readableBytes)) else { break }
        var header = message
        let announced = (try? MediaBusFrameHeader(from: &header))?.frameLength
        if let frame = try? reassembler.receive(message), let announced, frame.payload.readableBytes > Int(announced) {
            abort()
        }
    }
    return 0
}

var arguments = CommandLine.argc
var argumentVector: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&arguments, &argumentVector) { data, size in fuzzMediaBus(data, size) })
