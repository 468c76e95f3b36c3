// libFuzzer target: command and data message bodies (AMF0 → CommandMessage → RTMPCommand,
// DataMessage → metadata), as the server session sees them.
import NIOCore
import RTMP

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCommand(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
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
