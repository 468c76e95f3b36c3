import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - Test media

/// The clips the tests publish, made once per test process with ffmpeg's lavfi sources.
enum MediaKind: String, Sendable, CaseIterable {
    /// 640x360 30 fps H.264 Main (one GOP longer than the clip) + AAC-LC 44.1 kHz stereo, 6 s.
    case audioVideo
    /// AAC-LC 44.1 kHz stereo only, 6 s.
    case audioOnly
    /// 640x360 30 fps H.264 Main only, 6 s.
    case videoOnly
    /// 320x180 H.264 + AAC, 4 s: cheap to decode 100 times for the fan-out test.
    case small
    /// 640x360 30 fps H.264 Main with 2 s GOPs (`-g 60`) + AAC-LC 44.1 kHz stereo, 12 s: HLS cuts a segment per GOP.
    case gopAudioVideo
    /// 320x180 30 fps H.264 Main with 2 s GOPs + AAC-LC 44.1 kHz stereo, 6 s: a new resolution mid-stream.
    case gopSmallAudioVideo
    /// 640x360 30 fps H.264 Main with 2 s GOPs only, 6 s.
    case gopVideoOnly
    /// 640x360 30 fps H.264 Main with 1 s GOPs + AAC-LC 44.1 kHz stereo, 12 s: a viewer that
    /// lost frames resumes at the next keyframe, at most 1 s away.
    case shortGOPAudioVideo
    /// 640x360 30 fps with moving film grain (so the rungs' rate control reaches its
    /// target, as with camera input), 2 s GOPs, + AAC-LC 44.1 kHz stereo, 18 s.
    case noisyGOPAudioVideo
    /// 640x360 30 fps H.264 with 2 s GOPs + MP3 44.1 kHz stereo (an older encoder), 8 s.
    case gopVideoMP3
    /// 640x360 30 fps HEVC Main (libx265) with 2 s GOPs + AAC-LC 48 kHz stereo, 12 s, in MP4:
    /// Debian's ffmpeg 5.1 cannot write HEVC into FLV, so an Enhanced RTMP publisher remuxes it.
    case hevcAudioVideo
    /// 640x360 30 fps AV1 Main (libaom, realtime) with 2 s GOPs + AAC-LC 48 kHz stereo, 12 s, in MP4.
    case av1AudioVideo
    /// An encoder-made ladder: three H.264 Main video streams (640x360, 426x240, 320x180; 30
    /// fps, 2 s GOPs at the same frames) + two AAC-LC 48 kHz stereo streams (440 Hz, and a
    /// second language at 880 Hz), 12 s, in MP4. PyAV's FFmpeg writes it as Enhanced RTMP v2
    /// multitrack: the first video and audio streams as track 0, the others as tracks 1 and 2
    /// (video) and 1 (audio).
    case multitrackAudioVideo
    /// The same ladder, 20 s, whose second video stream (426x240) ends after 8 s: a track
    /// the encoder stops sending while the others go on.
    case multitrackTrackStops
    /// 640x360 30 fps H.264 Main with 2 s GOPs + Opus 48 kHz stereo (libopus, 20 ms packets),
    /// 12 s, in MP4: an Enhanced RTMP publisher sends the Opus as an `Opus` FourCC audio track.
    case opusAudioVideo

    /// The clip's container: FLV, but MP4 for what legacy FLV cannot carry.
    var container: String { [.hevcAudioVideo, .av1AudioVideo, .multitrackAudioVideo, .multitrackTrackStops, .opusAudioVideo].contains(self) ? "mp4" : "flv" }

    /// H.264 Main with a keyframe every 60 frames (2 s at 30 fps) and no scene-cut keyframes.
    private static let twoSecondGOPs = ["-c:v", "libx264", "-profile:v", "main", "-preset", "veryfast", "-g", "60", "-keyint_min", "60", "-sc_threshold", "0", "-pix_fmt", "yuv420p"]

    fileprivate var arguments: [String] {
        let video = ["-c:v", "libx264", "-profile:v", "main", "-preset", "veryfast", "-g", "300", "-pix_fmt", "yuv420p"]
        let audio = ["-c:a", "aac", "-ac", "2"]
        let sine = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100"]
        switch self {
        case .audioVideo:
            return ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30"] + sine + video + audio + ["-t", "6"]
        case .audioOnly:
            return sine + audio + ["-t", "6"]
        case .videoOnly:
            return ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30"] + video + ["-t", "6"]
        case .small:
            return ["-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30"] + sine + video + audio + ["-t", "4"]
        case .gopAudioVideo:
            return ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30"] + sine + Self.twoSecondGOPs + audio + ["-t", "12"]
        case .gopSmallAudioVideo:
            return ["-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30"] + sine + Self.twoSecondGOPs + audio + ["-t", "6"]
        case .shortGOPAudioVideo:
            let oneSecondGOPs = Self.twoSecondGOPs.map { $0 == "60" ? "30" : $0 }
            return ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30"] + sine + oneSecondGOPs + audio + ["-t", "12"]
        case .gopVideoOnly:
            return ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30"] + Self.twoSecondGOPs + ["-t", "6"]
        case .noisyGOPAudioVideo:
            return ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30,noise=alls=12:allf=t"] + sine + Self.twoSecondGOPs + ["-b:v", "2M"] + audio + ["-t", "18"]
        case .gopVideoMP3:
            return ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30"] + sine + Self.twoSecondGOPs + ["-c:a", "libmp3lame", "-b:a", "128k", "-ac", "2"] + ["-t", "8"]
        case .hevcAudioVideo:
            return ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                    "-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "keyint=60:min-keyint=60:scenecut=0:log-level=error",
                    "-tag:v", "hvc1", "-pix_fmt", "yuv420p"] + audio + ["-t", "12"]
        case .multitrackAudioVideo:
            return ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-f", "lavfi", "-i", "testsrc2=size=426x240:rate=30",
                    "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                    "-f", "lavfi", "-i", "sine=frequency=880:sample_rate=48000",
                    "-map", "0:v", "-map", "1:v", "-map", "2:v", "-map", "3:a", "-map", "4:a"] + Self.twoSecondGOPs + audio + ["-t", "12"]
        case .multitrackTrackStops:
            return ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-f", "lavfi", "-i", "testsrc2=size=426x240:rate=30:duration=8",
                    "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                    "-map", "0:v", "-map", "1:v", "-map", "2:v", "-map", "3:a"] + Self.twoSecondGOPs + audio + ["-t", "20"]
        case .opusAudioVideo:
            return ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000"]
                + Self.twoSecondGOPs + ["-c:a", "libopus", "-b:a", "96k", "-ac", "2", "-t", "12"]
        case .av1AudioVideo:
            return ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                    "-c:v", "libaom-av1", "-usage", "realtime", "-cpu-used", "8", "-b:v", "600k", "-g", "60", "-keyint_min", "60",
                    "-pix_fmt", "yuv420p"] + audio + ["-t", "12"]
        }
    }
}

/// A generated clip and what ffprobe counts in it.
struct MediaFile: Sendable {
    let kind: MediaKind
    let url: URL
    let videoFrames: Int
    let audioFrames: Int
    let width: Int?
    let height: Int?
}

/// Generates each clip at most once per test process.
actor MediaLibrary {
    static let shared = MediaLibrary()

    private var tasks: [MediaKind: Task<MediaFile, any Error>] = [:]
    private var directory: URL?

    func file(_ kind: MediaKind) async throws -> MediaFile {
        if let task = self.tasks[kind] {
            return try await task.value
        }
        let directory = try self.mediaDirectory()
        let task = Task { try await Self.generate(kind, in: directory) }
        self.tasks[kind] = task
        return try await task.value
    }

    /// `<tmp>/estuary-it-media-<pid>`; directories of earlier, finished test processes are removed.
    private func mediaDirectory() throws -> URL {
        if let directory = self.directory { return directory }
        let temporary = FileManager.default.temporaryDirectory
        let prefix = "estuary-it-media-"
        if let entries = try? FileManager.default.contentsOfDirectory(atPath: temporary.path) {
            for entry in entries where entry.hasPrefix(prefix) {
                if let pid = Int32(entry.dropFirst(prefix.count)), pid != getpid(), kill(pid, 0) != 0 {
                    try? FileManager.default.removeItem(at: temporary.appendingPathComponent(entry))
                }
            }
        }
        let directory = temporary.appendingPathComponent("\(prefix)\(getpid())", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        return directory
    }

    private static func generate(_ kind: MediaKind, in directory: URL) async throws -> MediaFile {
        let url = directory.appendingPathComponent("\(kind.rawValue).\(kind.container)")
        let ffmpeg = try TestEnvironment.tool("ffmpeg")
        let make = try await ChildProcess.run(
            ffmpeg,
            ["-nostdin", "-hide_banner", "-loglevel", "error", "-y"] + kind.arguments + ["-f", kind.container, url.path],
            name: "make-\(kind.rawValue)",
            directory: directory,
            timeout: .seconds(60)
        )
        guard make.succeeded else {
            throw IntegrationFailure("generating \(kind.rawValue) failed: \(make)")
        }
        let probe = try await ChildProcess.run(
            try TestEnvironment.tool("ffprobe"),
            ["-v", "error", "-count_packets", "-show_entries", "stream=index,codec_type,codec_name,width,height,nb_read_packets", "-of", "json", url.path],
            name: "count-\(kind.rawValue)",
            directory: directory,
            timeout: .seconds(30)
        )
        guard probe.succeeded else {
            throw IntegrationFailure("counting \(kind.rawValue) failed: \(probe)")
        }
        let report = try ProbeReport.decode(probe.stdout)
        return MediaFile(
            kind: kind,
            url: url,
            videoFrames: report.video?.readPackets ?? 0,
            audioFrames: report.audio?.readPackets ?? 0,
            width: report.video?.width,
            height: report.video?.height
        )
    }
}

// MARK: - ffprobe

struct ProbeStream: Decodable {
    var index: Int
    var codecType: String?
    var codecName: String?
    var profile: String?
    var level: Int?
    var width: Int?
    var height: Int?
    var sampleRate: String?
    var channels: Int?
    var nbReadPackets: String?
    var nbReadFrames: String?

    var readPackets: Int? { self.nbReadPackets.flatMap { Int($0) } }
    var readFrames: Int? { self.nbReadFrames.flatMap { Int($0) } }
}

struct ProbePacket: Decodable {
    var streamIndex: Int
    var dts: Int?
    var pts: Int?
    var flags: String?
    var size: String?

    var bytes: Int { self.size.flatMap { Int($0) } ?? 0 }

    var isKeyframe: Bool { self.flags?.contains("K") == true }
}

/// ffprobe's JSON output.
struct ProbeReport: Decodable {
    var streams: [ProbeStream]?
    var packets: [ProbePacket]?

    static func decode(_ json: String) throws -> ProbeReport {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        do {
            return try decoder.decode(ProbeReport.self, from: Data(json.utf8))
        } catch {
            throw IntegrationFailure("cannot decode ffprobe JSON (\(error)): \(json.prefix(500))")
        }
    }

    var video: ProbeStream? { self.streams?.first { $0.codecType == "video" } }
    var audio: ProbeStream? { self.streams?.first { $0.codecType == "audio" } }

    func packets(of stream: ProbeStream?) -> [ProbePacket] {
        guard let stream else { return [] }
        return (self.packets ?? []).filter { $0.streamIndex == stream.index }
    }

    /// Pairs of consecutive DTS values of a stream where the second is smaller.
    func dtsRegressions(of stream: ProbeStream?) -> [(Int, Int)] {
        let values = self.packets(of: stream).compactMap(\.dts)
        return zip(values, values.dropFirst()).filter { $0.1 < $0.0 }
    }
}

extension Scenario {
    /// Reads `url` to its end with ffprobe (streams and every packet), bounded by `timeout`.
    /// Records an issue and returns nil when ffprobe fails or never sees the end of the stream.
    func probe(
        _ url: String,
        name: String,
        timeout: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> ProbeReport? {
        let start = ContinuousClock.now
        let process = try self.startProbe(url, name: name)
        return try await self.finishProbe(process, timeout: timeout, startedAt: start, sourceLocation: sourceLocation)
    }

    /// Starts an ffprobe viewer of `url` (streams and every packet, JSON).
    func startProbe(_ url: String, name: String) throws -> ChildProcess {
        try self.launch(
            "ffprobe",
            [
                "-v", "error", "-show_entries",
                "stream=index,codec_type,codec_name,profile,width,height,sample_rate,channels:packet=stream_index,dts,pts,flags,size",
                "-of", "json", url,
            ],
            name: name
        )
    }

    /// Waits for an ffprobe viewer to end by itself; records an issue and returns nil when it
    /// fails or never sees the end of the stream.
    func finishProbe(
        _ process: ChildProcess,
        timeout: Duration = .seconds(20),
        startedAt start: ContinuousClock.Instant = .now,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> ProbeReport? {
        let run = await process.finish(timeout: timeout, startedAt: start)
        guard
            self.check(!run.timedOut, "\(process.name): the viewer never saw the end of the stream (killed after \(timeout)): \(run)", sourceLocation: sourceLocation),
            self.check(run.succeeded, "\(process.name) failed: \(run)", sourceLocation: sourceLocation)
        else { return nil }
        return try ProbeReport.decode(run.stdout)
    }

    /// Decodes every frame of a file: ffprobe -count_frames at log level error. Returns the report and the run.
    func decodeCheck(_ file: URL, name: String, timeout: Duration = .seconds(30)) async throws -> (ToolRun, ProbeReport?) {
        let run = try await self.run(
            "ffprobe",
            ["-v", "error", "-count_frames", "-show_entries", "stream=index,codec_type,codec_name,nb_read_frames", "-of", "json", file.path],
            name: name,
            timeout: timeout
        )
        return (run, run.succeeded ? try? ProbeReport.decode(run.stdout) : nil)
    }

    /// Publishes a clip with `ffmpeg -re -c copy` (looping forever when `loop`).
    func publish(_ media: MediaFile, to url: String, name: String, loop: Bool = false) throws -> ChildProcess {
        var arguments = ["-nostdin", "-hide_banner", "-loglevel", "warning"]
        if loop { arguments += ["-stream_loop", "-1"] }
        arguments += ["-re", "-i", media.url.path, "-c", "copy", "-f", "flv", url]
        let process = try self.launch("ffmpeg", arguments, name: name)
        self.note("\(name) (pid \(process.pid)) publishing \(media.kind.rawValue) to \(url)")
        return process
    }

    /// Waits until `GET /app/name.flv` answers 200 (the stream is published), bounded.
    func waitUntilLive(_ node: NodeProcess, _ app: String, _ stream: String, timeout: Duration = .seconds(10)) async throws {
        var lastStatus = 0
        let live = await eventually(timeout: timeout, interval: .milliseconds(100)) {
            guard let (connection, head) = try? await HTTPClient.openStream(port: node.httpPort, path: "/\(app)/\(stream).flv", timeout: .seconds(2)) else {
                return false
            }
            await connection.close()
            lastStatus = head.status
            return head.status == 200
        }
        try self.require(live, "\(app)/\(stream) not live within \(timeout) (last HTTP status \(lastStatus))")
    }

    /// Opens an HTTP-FLV viewer that the teardown closes.
    func openViewer(_ node: NodeProcess, _ app: String, _ stream: String) async throws -> HTTPFLVViewer {
        let viewer = try await HTTPFLVViewer.open(port: node.httpPort, path: "/\(app)/\(stream).flv")
        self.track(viewer.connection)
        return viewer
    }

    /// Checks that `actual` is within 1% of `expected`.
    @discardableResult
    func checkWithinOnePercent(_ actual: Int?, of expected: Int, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        guard let actual else {
            return self.check(false, "\(what): no count (expected \(expected))", sourceLocation: sourceLocation)
        }
        return self.check(
            abs(Double(actual - expected)) <= 0.01 * Double(expected) && expected > 0,
            "\(what): \(actual), expected \(expected) ± 1%",
            sourceLocation: sourceLocation
        )
    }
}
