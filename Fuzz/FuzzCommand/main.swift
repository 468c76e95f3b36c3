// libFuzzer target: command and data message bodies (AMF0 → CommandMessage → RTMPCommand,
// DataMessage → metadata), as the server session sees them.
import AMF0
import CLibFuzzer
import Glibc
import NIOCore
import RTMP

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzCommand(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let payload = ByteBuffer(bytes: UnsafeBufferPointer(start: data, count: size))
    if let command = try? CommandMessage(from: payload) {
        _ = try? RTMPCommand(command)
        var encoded = ByteBuffer()
        command.encode(into: &encoded)
        precondition((try? CommandMessage(from: encoded)) != nil, "re-encoded command did not decode")
    }
    if let data = try? DataMessage(from: payload) {
        _ = data.metadataBody()
    }
    return 0
}

var arguments = CommandLine.argc
var argumentVector: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&arguments, &argumentVector) { data, size in fuzzCommand(data, size) })
