// libFuzzer target: AMF0. A value sequence that decodes must re-encode and decode equal.
import AMF0
import CLibFuzzer
import Glibc
import NIOCore

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzAMF0(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    var input = ByteBuffer(bytes: UnsafeBufferPointer(start: data, count: size))
    let decoder = AMF0Decoder()
    guard let values = try? decoder.decodeAll(from: &input) else { return 0 }
    var encoded = ByteBuffer()
    AMF0Encoder().encode(values, into: &encoded)
    guard let again = try? decoder.decodeAll(from: &encoded) else {
        fatalError("re-encoded AMF0 did not decode")
    }
    // NaN != NaN, so compare encodings rather than values.
    var first = ByteBuffer(), second = ByteBuffer()
    AMF0Encoder().encode(values, into: &first)
    AMF0Encoder().encode(again, into: &second)
    precondition(first == second, "AMF0 round trip changed the values")
    return 0
}

var arguments = CommandLine.argc
var argumentVector: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&arguments, &argumentVector) { data, size in fuzzAMF0(data, size) })
