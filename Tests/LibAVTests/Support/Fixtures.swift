import Foundation
import Media
import NIOCore
import TestSupport

/// Media made by ffmpeg from lavfi sources and read back as Estuary `MediaFrame`s.
struct SourceStream {
    /// Every tag of the file, classified, in file order (script, sequence headers, frames).
    var frames: [MediaFrame]

    var videoSequenceHeader: MediaFrame? {
        frames.first { $0.kind == .video && $0.isSequenceHeader }
    }

    var audioSequenceHeader: MediaFrame? {
        frames.first { $0.kind == .audio && $0.isSequenceHeader }
    }

    /// Coded video frames (what a decoder outputs one picture for). ffmpeg's FLV muxer
    /// ends the file with an AVC end-of-sequence tag (`0x17 0x02`), which is not one.
    var videoFrameCount: Int {
        frames.filter(\.isCodedVideo).count
    }

    var audioFrameCount: Int {
        frames.filter { $0.kind == .audio && !$0.isSequenceHeader }.count
    }

    /// H.264 High + AAC-LC 44.1 kHz stereo, 320x240 at 30 fps, a keyframe every 30 frames
    /// (scene-cut keyframes off, so GOPs are regular), in FLV.
    static func makeH264AAC(seconds: Int = 3, in directory: TemporaryDirectory) async throws -> SourceStream {
        let flv = directory.file("source.flv")
        let result = try await Tool.run("ffmpeg", [
            "-v", "error", "-nostdin", "-y",
            "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
            "-t", String(seconds),
            "-c:v", "libx264", "-profile:v", "high", "-pix_fmt", "yuv420p",
            "-g", "30", "-keyint_min", "30", "-sc_threshold", "0", "-bf", "2",
            "-c:a", "aac", "-b:a", "64k", "-ac", "2",
            "-f", "flv", flv.path,
        ], in: directory.url)
        guard result.succeeded else {
            throw TestFailure("making the FLV fixture failed: \(result)")
        }
        return try read(flv: flv)
    }

    /// Reads an FLV file with Media's `FLVTagReader`.
    static func read(flv: URL) throws -> SourceStream {
        var buffer = ByteBuffer(bytes: try Data(contentsOf: flv))
        var reader = FLVTagReader()
        var frames: [MediaFrame] = []
        while let tag = try reader.nextTag(from: &buffer) {
            frames.append(try tag.mediaFrame())
        }
        guard buffer.readableBytes == 0 else {
            throw TestFailure("\(buffer.readableBytes) bytes left after the last FLV tag")
        }
        return SourceStream(frames: frames)
    }
}

/// What ffprobe says about one stream of a file.
struct ProbedStream {
    var codecName: String
    var codecType: String
    var codecTag: String
    var width: Int?
    var height: Int?
    var sampleRate: Int?
    var channels: Int?
    var readFrames: Int?
    var startTime: Double?
}

enum Probe {
    /// `ffprobe -show_streams -count_frames` on `file`.
    static func streams(of file: URL, in directory: TemporaryDirectory) async throws -> [ProbedStream] {
        let result = try await Tool.run("ffprobe", [
            "-v", "error", "-show_streams", "-count_frames", "-of", "json", file.path,
        ], in: directory.url)
        guard result.succeeded, result.stderr.isEmpty else {
            throw TestFailure("ffprobe \(file.lastPathComponent): \(result)")
        }
        let json = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]
        let streams = json?["streams"] as? [[String: Any]] ?? []
        return streams.map { stream in
            ProbedStream(
                codecName: stream["codec_name"] as? String ?? "",
                codecType: stream["codec_type"] as? String ?? "",
                codecTag: stream["codec_tag_string"] as? String ?? "",
                width: stream["width"] as? Int,
                height: stream["height"] as? Int,
                sampleRate: (stream["sample_rate"] as? String).flatMap { Int($0) },
                channels: stream["channels"] as? Int,
                readFrames: (stream["nb_read_frames"] as? String).flatMap { Int($0) },
                startTime: (stream["start_time"] as? String).flatMap { Double($0) }
            )
        }
    }

    /// Decodes every frame of `file` with `ffmpeg -v error -f null`: nil when clean, or
    /// the complaint.
    static func decodeProblems(of file: URL, in directory: TemporaryDirectory) async throws -> String? {
        let result = try await Tool.run("ffmpeg", [
            "-v", "error", "-nostdin", "-i", file.path, "-f", "null", "-",
        ], in: directory.url)
        return result.succeeded && result.stderr.isEmpty ? nil : result.description
    }
}

extension MediaFrame {
    /// True for a video frame carrying coded pictures (not a sequence header, end of
    /// sequence or command).
    var isCodedVideo: Bool {
        kind == .video && (try? VideoTagHeader(from: payload))?.packetType == .codedFrames
    }

    /// True for a coded video keyframe: where segments start.
    var isCodedKeyframe: Bool {
        isCodedVideo && isKeyframe
    }
}

extension ByteBuffer {
    /// All readable bytes.
    var bytes: [UInt8] {
        getBytes(at: readerIndex, length: readableBytes) ?? []
    }
}

extension Array where Element == UInt8 {
    /// True when `pattern` occurs in the array.
    func contains(sequence pattern: [UInt8]) -> Bool {
        guard !pattern.isEmpty, count >= pattern.count else { return false }
        for start in 0...(count - pattern.count) where self[start] == pattern[0] {
            if Array(self[start..<(start + pattern.count)]) == pattern {
                return true
            }
        }
        return false
    }
}
