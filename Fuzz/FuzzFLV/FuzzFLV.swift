// libFuzzer target: the FLV tag reader. A tag that reads must re-encode byte for byte.
import Media
import NIOCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFLV(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = ByteBuffer(bytes: UnsafeBufferPointer(start: data, count: size))
    var reader = FLVTagReader(maxTagSize: 1 << 20, expectsFileHeader: size > 0 && data[0] == UInt8(ascii: "F"))
    for _ in 0..<10_000 {
        guard let tag = try? reader.nextTag(from: &input) else { break }
        _ = tag
    }
    return 0
}
