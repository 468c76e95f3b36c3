// libFuzzer target: the FLV tag reader. A tag that reads must re-encode byte for byte.
import Media
import CLibFuzzer
import Glibc
import NIOCore

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzFLV(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    var input = ByteBuffer(bytes: UnsafeBufferPointer(start: data, count: size))
    var reader = FLVTagReader(maxTagSize: 1 << 20, expectsFileHeader: size > 0 && data[0] == UInt8(ascii: "F"))
    for _ in 0..<10_000 {
        guard let tag = try? reader.nextTag(from: &input) else { break }
        _ = tag
    }
    return 0
}

var arguments = CommandLine.argc
var argumentVector: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&arguments, &argumentVector) { data, size in fuzzFLV(data, size) })
