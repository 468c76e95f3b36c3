// libFuzzer target: codec configuration records and FLV audio/video tag headers, the
// parsers that see every publisher's sequence headers, and Enhanced RTMP v2 multitrack
// video tags, split into single-track tags that must classify or throw; Opus headers and
// packet TOCs; multitrack audio tags.
import Media
import CLibFuzzer
import Glibc
import NIOCore

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzCodecConfig(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let payload = ByteBuffer(bytes: UnsafeBufferPointer(start: data, count: size))
    if let record = try? AVCDecoderConfigurationRecord(from: payload) { _ = record.codecString }
    if let record = try? HEVCDecoderConfigurationRecord(from: payload) { _ = record.codecString }
    if let record = try? AV1CodecConfigurationRecord(from: payload) { _ = record.codecString }
    if MultitrackVideoTag.isMultitrack(payload), let tag = try? MultitrackVideoTag(payload) {
        for track in tag.tracks {
            if let frame = try? MediaFrame.classified(kind: .video, timestamp: 0, payload: track.payload) {
                _ = try? frame.validatedConfigurationRecord()
            }
        }
    }
    if MultitrackAudioTag.isMultitrack(payload), let tag = try? MultitrackAudioTag(payload) {
        for track in tag.tracks {
            if let frame = try? MediaFrame.classified(kind: .audio, timestamp: 0, payload: track.payload) {
                _ = try? frame.validatedConfigurationRecord()
            }
        }
    }
    if let config = try? AudioSpecificConfig(from: payload) { _ = config.codecString }
    if let head = try? OpusHead(from: payload) { _ = head.channelCount }
    _ = OpusHead.packetSamples(payload.readableBytesView)
    // An audio sequence header (AAC, `mp4a` or `Opus`) validated as ingest does.
    if let frame = try? MediaFrame.classified(kind: .audio, timestamp: 0, payload: payload) {
        _ = try? frame.validatedConfigurationRecord()
    }
    _ = try? VideoTagHeader(from: payload)
    _ = try? AudioTagHeader(from: payload)
    _ = try? MediaFrame.classified(kind: .video, timestamp: 0, payload: payload)
    _ = try? MediaFrame.classified(kind: .audio, timestamp: 0, payload: payload)
    return 0
}

var arguments = CommandLine.argc
var argumentVector: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&arguments, &argumentVector) { data, size in fuzzCodecConfig(data, size) })
