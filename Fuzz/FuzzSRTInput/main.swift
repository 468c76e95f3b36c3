// libFuzzer target: what an SRT caller controls. The first byte chooses:
// - even: the rest is a stream id (`SRTStreamID`), checked against an oracle of the
//   documented grammar: an accepted id names a valid `app/name`, is within SRT's 512 bytes,
//   and publishes exactly when it says so (`publish:` or `m=publish`); a refusal's reason is
//   one bounded line;
// - odd: the rest is MPEG-TS as an SRT publisher sends it, in 1316-byte messages, demuxed by
//   libavformat (`TSDemuxer`) into hub frames: no coded video frame before its sequence
//   header, no Opus packet before its OpusHead, no negative timestamp, no AAC frame larger
//   than ADTS can describe, and a bounded number of frames per input.
import CFFmpeg
import CLibFuzzer
import Foundation
import Glibc
import LibAV
import Media
import NIOCore
import SRT

func fuzzStreamID(_ bytes: ArraySlice<UInt8>) {
    let text = String(decoding: bytes, as: UTF8.self)
    do {
        let id = try SRTStreamID(parsing: text)
        precondition(text.utf8.count <= SRTStreamID.maxLength, "accepted an id of \(text.utf8.count) bytes")
        precondition(StreamPath.isValidComponent(id.path.app) && StreamPath.isValidComponent(id.path.name), "accepted path \(id.path)")
        let decoded = text.contains("%") ? (text.removingPercentEncoding ?? text) : text
        let says: Bool
        if decoded.hasPrefix("#!::") {
            says = decoded.dropFirst(4).split(separator: ",").contains("m=publish")
        } else {
            says = decoded.hasPrefix("publish:")
        }
        precondition((id.mode == .publish) == says, "mode \(id.mode) for '\(decoded)'")
    } catch {
        let reason = error.description
        precondition(reason.utf8.count <= 300 && !reason.contains("\n"), "a refusal of \(reason.utf8.count) bytes")
    }
}

func fuzzTransportStream(_ bytes: ArraySlice<UInt8>) {
    var offset = bytes.startIndex
    let demuxer: TSDemuxer
    do {
        demuxer = try TSDemuxer { buffer in
            // One SRT message at a time, as `SRTMessageReader` hands them over.
            let count = min(buffer.count, 1316, bytes.endIndex - offset)
            guard count > 0 else { return 0 }
            bytes[offset..<(offset + count)].withUnsafeBytes { buffer.copyMemory(from: $0) }
            offset += count
            return count
        }
    } catch {
        return
    }
    var sawVideoHeader = false
    var sawOpusHead = false
    var frames = 0
    for _ in 0..<100_000 {
        guard let batch = try? demuxer.nextFrames() else { return }
        for frame in batch {
            frames += 1
            precondition(frame.timestamp >= 0, "a negative timestamp \(frame.timestamp)")
            if frame.kind == .video {
                if frame.isSequenceHeader { sawVideoHeader = true }
                precondition(sawVideoHeader || frame.isSequenceHeader, "a coded video frame before its sequence header")
            } else if frame.kind == .audio, (try? frame.audioTagHeader())?.codec == .opus {
                if frame.isSequenceHeader { sawOpusHead = true }
                precondition(sawOpusHead, "an Opus packet before its OpusHead")
            } else if frame.kind == .audio, !frame.isSequenceHeader {
                precondition(frame.payload.readableBytes <= 2 + 8191, "an AAC frame of \(frame.payload.readableBytes) bytes")
            }
        }
        precondition(frames <= bytes.count + 16, "\(frames) frames from \(bytes.count) bytes")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzSRTInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if bytes[0] & 1 == 0 {
        fuzzStreamID(bytes.dropFirst())
    } else {
        fuzzTransportStream(bytes.dropFirst())
    }
    return 0
}

// libav would print every malformed input on stderr: AV_LOG_QUIET.
av_log_set_level(-8)
var arguments = CommandLine.argc
var argumentVector: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&arguments, &argumentVector) { data, size in fuzzSRTInput(data, size) })
