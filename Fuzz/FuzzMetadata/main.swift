// libFuzzer target: stream metadata as the server session handles it. A data message body
// (`@setDataFrame` / `onMetaData` ...) is decoded with the node's value budget, and the
// metadata is re-encoded as the `onMetaData` body every player receives (metadataBody()).
//
// Re-encoding repairs invalid UTF-8, so it can grow a message: every invalid byte becomes
// U+FFFD (3 bytes), and an ECMA array whose end marker was missing gets one. Everything else
// re-encodes to at most its own size, and `@setDataFrame` is dropped, so the re-encoded body
// is at most 3 × the input (plus a small constant, for safety). The node checks its own
// maxMetadataBytes limit after re-encoding; this bound is what makes that check sufficient,
// and it keeps the body far below RTMP's 24-bit message length.
//
// Asserted: nothing traps; the re-encoded body is within the bound and below 0xFFFFFF bytes;
// it decodes again (same budget) to `onMetaData` and one value; and re-encoding that is a
// fixed point (the same bytes), so metadata passed on again (relay, bus) does not drift.
// The tracks an edge reads from the maps (`TrackIdInfoMaps`) are at most `mostTracks` of each
// kind, named `track1`–`track255` / `audio1`–`audio255`, each once; and the node's own maps,
// written into any metadata, read back as exactly the tracks it wrote.
import AMF0
import CLibFuzzer
import Glibc
import NIOCore
import RTMP

enum Bounds {
    /// U+FFFD is three bytes; see above.
    static let growthFactor = 3
    static let slack = 16
    static let maxRTMPMessage = 0xFFFFFF
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzMetadata(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let input = ByteBuffer(bytes: UnsafeBufferPointer(start: data, count: size))
    // The node's own budget (RTMPServerConnectionHandler decodes metadata with it).
    let decoder = AMF0Decoder(maxValues: RTMPServerConfiguration().maxMetadataValues)
    guard let message = try? DataMessage(from: input, decoder: decoder), let body = message.metadataBody() else { return 0 }

    let bound = Bounds.growthFactor * size + Bounds.slack
    precondition(body.readableBytes <= Bounds.maxRTMPMessage, "re-encoded metadata of \(body.readableBytes) bytes cannot be sent over RTMP")
    precondition(body.readableBytes <= bound, "\(size) bytes of metadata re-encoded to \(body.readableBytes) bytes (bound \(bound))")

    guard let again = try? DataMessage(from: body, decoder: decoder) else {
        fatalError("re-encoded metadata does not decode")
    }
    precondition(again.name == DataMessage.onMetaData && again.values.count == 1, "re-encoded metadata is not onMetaData and one value")
    guard let second = again.metadataBody() else { fatalError("re-encoded metadata carries no metadata") }
    precondition(second == body, "re-encoding metadata twice changed it")

    let read = TrackIdInfoMaps.renditions(inMetadataBody: body)
    precondition(Set(read).count == read.count, "a track read twice: \(read)")
    for kind in ["track", "audio"] {
        let ids = read.filter { $0.hasPrefix(kind) }.map { UInt8($0.dropFirst(5)) }
        precondition(ids.count <= TrackIdInfoMaps.mostTracks, "\(ids.count) \(kind)s read, over \(TrackIdInfoMaps.mostTracks)")
        precondition(ids.allSatisfy { ($0 ?? 0) > 0 }, "a \(kind) rendition that names no track: \(read)")
    }
    let written = TrackIdInfoMaps.metadata(again.metadata, videoTracks: [1, 2], audioTracks: [1])
    let writtenBody = DataMessage(name: DataMessage.onMetaData, values: [written ?? .null]).metadataBody() ?? ByteBuffer()
    let readBack = TrackIdInfoMaps.renditions(inMetadataBody: writtenBody)
    precondition(readBack == ["track1", "track2", "audio1"], "the node's maps read back as \(readBack)")
    return 0
}

var arguments = CommandLine.argc
var argumentVector: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&arguments, &argumentVector) { data, size in fuzzMetadata(data, size) })
