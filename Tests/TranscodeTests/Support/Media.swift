import Foundation
import Media
import NIOCore
import TestSupport

/// A 720p30 H.264 + AAC source made by ffmpeg from lavfi, read back as `MediaFrame`s.
struct SourceClip {
    var url: URL
    var frames: [MediaFrame]

    /// `seconds` of testsrc2 with film grain (so the encoder has work to do and the rate
    /// control reaches its target), a keyframe every 30 frames and no scene-cut keyframes,
    /// two B-frames (so decode order differs from presentation order), and a 440 Hz sine
    /// as AAC-LC 44.1 kHz stereo.
    /// `audio` replaces the AAC arguments (codec, rate, channels) to make sources with other audio.
    static func make(
        seconds: Int,
        size: String = "1280x720",
        audio: [String] = ["-c:a", "aac", "-b:a", "96k", "-ac", "2"],
        in directory: TemporaryDirectory
    ) async throws -> SourceClip {
        let url = directory.file("source.flv")
        let result = try await Tool.run("ffmpeg", [
            "-v", "error", "-nostdin", "-y",
            "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=30,noise=alls=12:allf=t",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
            "-t", String(seconds),
            "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-b:v", "4M",
            "-g", "30", "-keyint_min", "30", "-sc_threshold", "0", "-bf", "2",
        ] + audio + [
            "-f", "flv", url.path,
        ], in: directory.url, timeout: .seconds(120))
        guard result.succeeded else {
            throw TestFailure("making the source failed: \(result)")
        }
        return SourceClip(url: url, frames: try FLVFile.read(url))
    }

    var keyframePresentationTimes: [Int64] {
        get throws {
            // ffmpeg's FLV muxer ends with an end-of-sequence tag (0x17 0x02): not a picture.
            try frames.filter { $0.kind == .video && $0.isKeyframe && (try? VideoTagHeader(from: $0.payload).packetType) == .codedFrames }
                .map { $0.timestamp + Int64(try VideoTagHeader(from: $0.payload).compositionTime) }
        }
    }
}

enum FLVFile {
    static func read(_ url: URL) throws -> [MediaFrame] {
        var buffer = ByteBuffer(bytes: try Data(contentsOf: url))
        var reader = FLVTagReader()
        var frames: [MediaFrame] = []
        while let tag = try reader.nextTag(from: &buffer) {
            frames.append(try tag.mediaFrame())
        }
        return frames
    }

    /// Header, PreviousTagSize0 and every frame as a tag, with Media's encoders.
    static func write(_ frames: [MediaFrame], to url: URL) throws {
        var buffer = FLVFileHeader.httpFLVPreamble(
            hasAudio: frames.contains { $0.kind == .audio },
            hasVideo: frames.contains { $0.kind == .video },
            allocator: ByteBufferAllocator()
        )
        for frame in frames {
            FLVTagEncoder.encode(frame, into: &buffer)
        }
        try Data(buffer.readableBytesView).write(to: url)
    }
}

/// What ffprobe says about a file's video: stream facts and every packet.
struct ProbedVideo {
    var codecName: String
    var width: Int
    var height: Int
    var frameRate: String
    /// (pts in ms, keyframe, size in bytes) of each video packet, in file order.
    var packets: [(pts: Int64, key: Bool, size: Int)]
    var audioPackets: Int

    var keyframePresentationTimes: [Int64] { packets.filter(\.key).map(\.pts) }

    static func probe(_ url: URL, in directory: TemporaryDirectory) async throws -> ProbedVideo {
        let result = try await Tool.run("ffprobe", [
            "-v", "error", "-show_streams", "-show_packets", "-of", "json", url.path,
        ], in: directory.url)
        guard result.succeeded else {
            throw TestFailure("ffprobe \(url.lastPathComponent): \(result)")
        }
        let json = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any] ?? [:]
        let streams = json["streams"] as? [[String: Any]] ?? []
        guard let video = streams.first(where: { $0["codec_type"] as? String == "video" }),
              let videoIndex = video["index"] as? Int
        else {
            throw TestFailure("no video stream in \(url.lastPathComponent)")
        }
        let packets = json["packets"] as? [[String: Any]] ?? []
        var videoPackets: [(Int64, Bool, Int)] = []
        var audioPackets = 0
        for packet in packets {
            guard packet["stream_index"] as? Int == videoIndex else {
                audioPackets += 1
                continue
            }
            let pts = Int64(((Double(packet["pts_time"] as? String ?? "") ?? -1) * 1000).rounded())
            let key = (packet["flags"] as? String ?? "").hasPrefix("K")
            let size = Int(packet["size"] as? String ?? "") ?? 0
            videoPackets.append((pts, key, size))
        }
        return ProbedVideo(
            codecName: video["codec_name"] as? String ?? "",
            width: video["width"] as? Int ?? 0,
            height: video["height"] as? Int ?? 0,
            frameRate: video["avg_frame_rate"] as? String ?? "",
            packets: videoPackets,
            audioPackets: audioPackets
        )
    }

    /// Decodes every frame with `ffmpeg -v error -f null`: nil when clean, or the complaint.
    static func decodeProblems(of url: URL, in directory: TemporaryDirectory) async throws -> String? {
        let result = try await Tool.run("ffmpeg", ["-v", "error", "-nostdin", "-i", url.path, "-f", "null", "-"], in: directory.url)
        return result.succeeded && result.stderr.isEmpty ? nil : result.description
    }
}
