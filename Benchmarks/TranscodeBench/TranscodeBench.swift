import ArgumentParser
import Foundation
import LibAV
import Logging
import Transcode

#if canImport(Glibc)
import Glibc
#endif

/// `make bench-transcode`: the same source into the default ladder, once with Estuary's
/// pipeline and once with the equivalent ffmpeg command line, each in its own process,
/// measured by the kernel (wall time, CPU time, peak RSS), and reported side by side.
@main
struct TranscodeBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transcode-bench",
        abstract: "Estuary's ABR pipeline against the ffmpeg CLI on the same ladder.",
        subcommands: [Compare.self, Estuary.self, Churn.self],
        defaultSubcommand: Compare.self
    )
}

/// Runs the Estuary pipeline on a file (the child process `compare` measures).
struct Estuary: AsyncParsableCommand {
    @Option(help: "Source FLV (H.264 + AAC).") var input: String
    @Option(help: "libx264 threads per rung (0: x264 decides).") var encoderThreads = 0

    func run() async throws {
        var logger = Logger(label: "transcode-bench.libav")
        logger.logLevel = .warning
        LibAVLogging.bootstrap(logger)
        var configuration = TranscodePipeline.Configuration(ladder: .default)
        configuration.encoderThreads = encoderThreads
        let statistics = try await EstuaryRun.run(input: input, configuration: configuration)
        let rungs = statistics.renditions.keys.sorted().map { name in
            let rendition = statistics.renditions[name]!
            return "\(name)=\(rendition.width)x\(rendition.height):\(rendition.framesEncoded)"
        }
        print("estuary: \(statistics.decodedPictures) pictures decoded, rungs \(rungs.joined(separator: " ")), \(statistics.lagDroppedFrames) dropped for lag")
        guard statistics.lagDroppedFrames == 0 else {
            throw BenchFailure("frames were dropped for lag: the comparison would be unfair")
        }
    }
}

struct Compare: AsyncParsableCommand {
    @Option(help: "Source FLV (H.264 + AAC, or enhanced FLV: HEVC).") var input: String
    @Option(help: "What the ffmpeg CLI reads: the same media in a container it reads (ffmpeg 5.1 reads no enhanced FLV); the input by default.")
    var referenceInput: String?
    @Option(help: "The source's video codec, for the report.") var sourceCodec = "H.264"
    @Option(help: "The source's duration in seconds.") var seconds: Double
    @Option(help: "Source frame rate.") var frameRate: Double = 30
    @Option(help: "Runs of each side (alternating); the median is reported.") var rounds = 3
    @Option(help: "ffmpeg binary.") var ffmpeg = "/usr/bin/ffmpeg"
    @Option(help: "Passed to the Estuary run.") var encoderThreads = 0

    func run() async throws {
        let me = CommandLine.arguments[0].hasPrefix("/") ? CommandLine.arguments[0]
            : FileManager.default.currentDirectoryPath + "/" + CommandLine.arguments[0]
        let plans = Ladder.default.plan(sourceWidth: 1280, sourceHeight: 720)
        let ffmpegArguments = Self.ffmpegArguments(input: referenceInput ?? input, plans: plans)
        FileHandle.standardError.write(Data("ffmpeg \(ffmpegArguments.joined(separator: " "))\n".utf8))
        var estuary: [ProcessCost] = []
        var reference: [ProcessCost] = []
        for round in 1...max(1, rounds) {
            FileHandle.standardError.write(Data("round \(round): estuary\n".utf8))
            let ours = try await MeasuredProcess.run(me, ["estuary", "--input", input, "--encoder-threads", String(encoderThreads)])
            guard ours.exitStatus == 0 else { throw BenchFailure("the Estuary run failed (status \(ours.exitStatus))") }
            estuary.append(ours)
            FileHandle.standardError.write(Data("round \(round): ffmpeg\n".utf8))
            let theirs = try await MeasuredProcess.run(ffmpeg, ffmpegArguments)
            guard theirs.exitStatus == 0 else { throw BenchFailure("ffmpeg failed (status \(theirs.exitStatus))") }
            reference.append(theirs)
        }
        print(Self.report(estuary: Self.median(estuary), ffmpeg: Self.median(reference), seconds: seconds, frameRate: frameRate, rounds: rounds, plans: plans, codec: sourceCodec))
    }

    /// The ffmpeg CLI doing what the pipeline does: decode once, split, scale each rung
    /// (bicubic, the `scale` default and the pipeline's), libx264 with the pipeline's
    /// settings (veryfast, zerolatency, CBR-like VBV of one second, no B-frames, no
    /// scene-cut keyframes, IDR at the source's keyframes), AAC copied, FLV out.
    static func ffmpegArguments(input: String, plans: [RungPlan]) -> [String] {
        var filter = "[0:v]split=\(plans.count)" + plans.indices.map { "[s\($0)]" }.joined()
        for (index, plan) in plans.enumerated() {
            filter += ";[s\(index)]scale=\(plan.width):\(plan.height):flags=bicubic[v\(index)]"
        }
        var arguments = ["-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i", input, "-filter_complex", filter]
        for (index, plan) in plans.enumerated() {
            let rate = "\(plan.rung.videoBitRate / 1000)k"
            arguments += [
                "-map", "[v\(index)]", "-map", "0:a",
                "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-pix_fmt", "yuv420p",
                "-b:v", rate, "-maxrate", rate, "-bufsize", rate, "-bf", "0",
                "-force_key_frames", "source", "-x264-params", "scenecut=0:keyint=infinite",
                "-c:a", "copy", "-f", "flv", "/dev/null",
            ]
        }
        return arguments
    }

    static func median(_ costs: [ProcessCost]) -> ProcessCost {
        let sorted = costs.sorted { $0.wallSeconds < $1.wallSeconds }
        return sorted[sorted.count / 2]
    }

    static func report(estuary: ProcessCost, ffmpeg: ProcessCost, seconds: Double, frameRate: Double, rounds: Int, plans: [RungPlan], codec: String) -> String {
        let frames = seconds * frameRate
        func row(_ name: String, _ cost: ProcessCost) -> String {
            let fps = frames / cost.wallSeconds
            return "| \(name) | \(f(cost.wallSeconds, 1)) | \(f(fps, 1)) | \(f(seconds / cost.wallSeconds, 2))× | \(f(cost.cpuSeconds / seconds, 3)) | \(cost.peakResidentBytes >> 20) |"
        }
        let rungs = plans.map { "\($0.rung.name) \($0.width)x\($0.height) \($0.rung.videoBitRate / 1000)k" }.joined(separator: ", ")
        return """
        Source: \(f(seconds, 0)) s of \(codec) 1280x720 at \(f(frameRate, 0)) fps; ladder: \(rungs). Median of \(rounds) alternating runs.

        | pipeline | wall s | fps | × real time | CPU-s per source s | peak RSS MiB |
        | --- | --- | --- | --- | --- | --- |
        \(row("Estuary", estuary))
        \(row("ffmpeg CLI", ffmpeg))

        | Estuary / ffmpeg | ratio |
        | --- | --- |
        | throughput (fps) | \(f(ffmpeg.wallSeconds / estuary.wallSeconds, 2)) |
        | CPU per source second | \(f(estuary.cpuSeconds / ffmpeg.cpuSeconds, 2)) |
        | peak memory | \(f(Double(estuary.peakResidentBytes) / Double(ffmpeg.peakResidentBytes), 2)) |
        """
    }

    static func f(_ value: Double, _ digits: Int) -> String {
        String(format: "%.\(digits)f", value)
    }
}
