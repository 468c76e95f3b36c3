import Foundation
import Media
import NIOCore
import TestSupport

/// H.265 in enhanced-RTMP form, built by hand: FFmpeg 5.1's FLV muxer cannot write HEVC,
/// so ffmpeg encodes an MP4 with libx265 and ffprobe dumps its hvcC and its samples
/// (length-prefixed NAL units, the same layout enhanced RTMP carries) with timestamps.
enum HEVCSource {
    /// The enhanced-RTMP FourCC `hvc1`.
    static let fourCC: [UInt8] = Array("hvc1".utf8)

    static func make(in directory: TemporaryDirectory) async throws -> SourceStream {
        let mp4 = directory.file("hevc.mp4")
        let encode = try await Tool.run("ffmpeg", [
            "-v", "error", "-nostdin", "-y",
            "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-t", "2",
            "-c:v", "libx265", "-pix_fmt", "yuv420p",
            // Closed GOPs (no RASL pictures), so every segment decodes on its own.
            "-x265-params", "keyint=30:min-keyint=30:scenecut=0:open-gop=0:log-level=error",
            "-tag:v", "hvc1", mp4.path,
        ], in: directory.url, timeout: .seconds(120))
        guard encode.succeeded else {
            throw TestFailure("making the HEVC fixture failed: \(encode)")
        }
        let probe = try await Tool.run("ffprobe", [
            "-v", "error", "-select_streams", "v:0", "-show_data",
            "-show_entries", "stream=extradata:packet=pts_time,dts_time,flags,data",
            "-of", "json", mp4.path,
        ], in: directory.url)
        guard probe.succeeded else {
            throw TestFailure("ffprobe of the HEVC fixture failed: \(probe)")
        }
        let json = try JSONSerialization.jsonObject(with: probe.stdout) as? [String: Any]
        let streams = json?["streams"] as? [[String: Any]] ?? []
        let packets = json?["packets"] as? [[String: Any]] ?? []
        guard let extradata = (streams.first?["extradata"] as? String).map(hexDump), !extradata.isEmpty else {
            throw TestFailure("no hvcC in the HEVC fixture")
        }

        // 0x90: IsExHeader | FrameType 1 (key) | PacketType 0 (SequenceStart).
        var frames = [try MediaFrame.classified(kind: .video, timestamp: 0, payload: ByteBuffer(bytes: [0x90] + fourCC + extradata))]
        // MP4 DTS start below zero with B-frames; RTMP timestamps do not.
        let offset = 0.2
        for packet in packets {
            guard let ptsText = packet["pts_time"] as? String, let pts = Double(ptsText),
                  let dtsText = packet["dts_time"] as? String, let dts = Double(dtsText),
                  let flags = packet["flags"] as? String, let data = packet["data"] as? String
            else {
                throw TestFailure("malformed ffprobe packet \(packet)")
            }
            let dtsMilliseconds = Int64(((dts + offset) * 1000).rounded())
            let compositionTime = Int32(((pts + offset) * 1000).rounded()) - Int32(dtsMilliseconds)
            // 0x80 | FrameType (1 key, 2 inter) << 4 | PacketType 1 (CodedFrames), then
            // the FourCC and SI24 composition time.
            let frameType: UInt8 = flags.hasPrefix("K") ? 1 : 2
            var payload: [UInt8] = [0x80 | frameType << 4 | 1] + fourCC
            payload += [UInt8(truncatingIfNeeded: compositionTime >> 16), UInt8(truncatingIfNeeded: compositionTime >> 8), UInt8(truncatingIfNeeded: compositionTime)]
            payload += hexDump(data)
            frames.append(try MediaFrame.classified(kind: .video, timestamp: dtsMilliseconds, payload: ByteBuffer(bytes: payload)))
        }
        return SourceStream(frames: frames)
    }

    /// Bytes of an ffprobe `-show_data` dump: lines of `offset: hex groups  ascii`.
    static func hexDump(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        for line in text.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            // The hex part is the 40 characters after ": " (8 groups of 4 digits + spaces).
            let hexPart = line[line.index(colon, offsetBy: 2)...].prefix(40)
            let digits = Array(hexPart.filter(\.isHexDigit))
            var index = 0
            while index + 1 < digits.count {
                bytes.append(UInt8(String(digits[index...(index + 1)]), radix: 16)!)
                index += 2
            }
        }
        return bytes
    }
}
