// libFuzzer target: AMF0. A value sequence that decodes must re-encode and decode equal.
import NIOCore
import RTMP

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAMF0(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
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
