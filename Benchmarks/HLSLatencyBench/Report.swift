import ArgumentParser
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Renders the markdown section for docs/benchmarks.md from one or more runs.
struct Report: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Render runs (JSON from `run`) as a markdown section.")

    @Option(name: .customLong("result"), help: "A JSON result of `run` (repeatable; the first run with 0 viewers is the baseline).")
    var results: [String]

    @Option(help: "The command that produced the runs, quoted in the section.")
    var command = "scripts/bench-hls.sh"

    @Option(help: "Source description.")
    var source = "640x360 30 fps H.264 (libx264 -tune zerolatency, -g 60) + AAC"

    func run() throws {
        let decoder = JSONDecoder()
        let runs = try results.map { path -> RunReport in
            guard let data = FileManager.default.contents(atPath: path) else { throw BenchError.message("cannot read \(path)") }
            return try decoder.decode(RunReport.self, from: data)
        }
        guard !runs.isEmpty else { throw ValidationError("no --result") }
        print(Self.markdown(runs: runs, command: command, source: source))
    }

    static func markdown(runs: [RunReport], command: String, source: String) -> String {
        let baseline = runs.first { $0.viewers == 0 } ?? runs[0]
        let loaded = runs.last { $0.viewers > 0 }
        let partTarget = baseline.partTargetSeconds ?? 0.334
        let targetDuration = baseline.targetDurationSeconds ?? 2
        let classicTarget = (targetDuration + 0.5) * 1000
        let llTarget = 1000.0
        var out: [String] = []
        out.append("## HLS and LL-HLS availability latency")
        out.append("")
        out.append("Command: `\(command)` (`make bench-hls`). Date: \(baseline.date). Machine: \(machine()).")
        out.append("Source: \(source), \(Int(baseline.publishSeconds)) s, published over RTMP by `hls-latency-bench` itself, paced in real time by DTS; the node runs with default HLS settings (PART-TARGET \(format(partTarget, 3)) s, TARGETDURATION \(Int(targetDuration)) s). Figures cover the frames with DTS \(Int(baseline.skipSeconds))–\(Int(baseline.skipSeconds + baseline.windowSeconds)) s (\(Int(baseline.windowSeconds)) s of steady state, \(baseline.llhls?.framesInWindow ?? 0) video frames).")
        out.append("")
        out.append("Latency = the moment the playlist response listing a frame's part (LL-HLS) or segment (classic) reached the player − the moment the publisher wrote that frame. The LL-HLS player blocks on `_HLS_msn`/`_HLS_part` for the next part as hls.js does and reads each part's `tfdt`/`trun`; the classic player polls `index.m3u8` every 100 ms and takes segment N's frames from the fMP4 `segN.m4s` (same cut points and sequence numbers). Frames are matched exactly on their PTS in ms.")
        out.append("")
        out.append("| variant | load on the node | frames matched | p50 | p95 | max | target (p95) | met? |")
        out.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for run in runs {
            let load = run.viewers == 0 ? "2 players" : "2 players + \(run.viewers) LL-HLS viewers"
            if let figures = run.llhls {
                out.append(row("LL-HLS (blocking reload), parsing player", load, figures, target: llTarget))
            }
            if let figures = run.classic {
                out.append(row("classic HLS (poll 100 ms)", load, figures, target: classicTarget))
            }
            if let viewers = run.loadViewers, let p50 = viewers.latencyP50Milliseconds, let p95 = viewers.latencyP95Milliseconds, let max = viewers.latencyMaxMilliseconds {
                out.append("| LL-HLS, all \(viewers.viewers) load viewers | \(load) | \(viewers.framesMeasured) frame views | \(seconds(p50)) | \(seconds(p95)) | \(seconds(max)) | ≤ 1 s | \(verdict(p95, llTarget)) |")
            }
        }
        out.append("")
        out.append("| HLS viewers | node CPU (cores) | CPU-s per s per 100 viewers | node RSS (mean / max) | parts per viewer per s | viewer errors | generator CPU (cores) |")
        out.append("| --- | --- | --- | --- | --- | --- | --- |")
        for run in runs {
            guard let cpu = run.cpu else { continue }
            var per100 = "—"
            if run.viewers > 0, let base = baseline.cpu, run.label != baseline.label {
                let net = (cpu.serverCores - base.serverCores) * 100 / Double(run.viewers)
                per100 = "\(format(net, 3)) (net of the 0-viewer run; \(format(cpu.serverCores * 100 / Double(run.viewers), 3)) gross)"
            }
            let rate = run.loadViewers.map { "\(format($0.partsPerViewerPerSecondMean, 2)) (min \(format($0.partsPerViewerPerSecondMin, 2)))" } ?? "—"
            let errors = run.loadViewers.map { "\($0.errors)" } ?? "—"
            out.append("| \(run.viewers) | \(format(cpu.serverCores, 3)) | \(per100) | \(mebibytes(cpu.rssMeanKiB)) / \(mebibytes(cpu.rssMaxKiB)) | \(rate) | \(errors) | \(format(cpu.generatorCores, 2)) |")
        }
        out.append("")
        out.append(analysis(baseline: baseline, loaded: loaded, partTarget: partTarget, targetDuration: targetDuration))
        return out.joined(separator: "\n")
    }

    private static func row(_ name: String, _ load: String, _ figures: LatencyFigures, target: Double) -> String {
        let matched = "\(figures.framesMatched)/\(figures.framesInWindow) (\(format(figures.matchedFraction * 100, 1)) %)"
        return "| \(name) | \(load) | \(matched) | \(seconds(figures.p50Milliseconds)) | \(seconds(figures.p95Milliseconds)) | \(seconds(figures.maxMilliseconds)) | ≤ \(format(target / 1000, 1)) s | \(verdict(figures.p95Milliseconds, target)) |"
    }

    private static func verdict(_ p95: Double, _ target: Double) -> String {
        p95 <= target
            ? "met, \(format((target - p95) / 1000, 2)) s to spare"
            : "**not met**, \(format((p95 - target) / 1000, 2)) s over"
    }

    private static func analysis(baseline: RunReport, loaded: RunReport?, partTarget: Double, targetDuration: Double) -> String {
        var sentences: [String] = []
        if let ll = baseline.llhls {
            var text = "LL-HLS latency is set by the part length: the segmenter closes a part at the first video frame that comes within two frame intervals of PART-TARGET (\(format(partTarget, 3)) s), so parts averaged \(Int(ll.unitMeanMilliseconds.rounded())) ms (shorter at segment ends, where the keyframe cuts), and a frame becomes available when the frame after its part's last one reaches the node: the last frame of a part waits one frame interval, the first a whole part, which gives min \(seconds(ll.minMilliseconds)), p50 \(seconds(ll.p50Milliseconds)) and p95 \(seconds(ll.p95Milliseconds)) once the delivery delay is added."
            if let overhead = ll.overheadP50Milliseconds, let overhead95 = ll.overheadP95Milliseconds {
                text += " Blocking reload itself adds almost nothing: the request is already parked at the node when the part is created, and its playlist response arrived \(format(overhead, 1)) ms after the publisher wrote the frame that closed the part (p95 \(format(overhead95, 1)) ms: RTMP ingest, hub, libavformat muxing, the rendition actor's wake-up, playlist rendering and loopback together)."
            }
            sentences.append(text)
        }
        if let classic = baseline.classic {
            var text = "Classic HLS waits for whole segments cut at keyframes: with a 2 s GOP every segment is \(format(classic.unitMeanMilliseconds / 1000, 2)) s, a segment's first frame waits all of it, and polling every 100 ms adds up to one interval"
            if let overhead = classic.overheadP50Milliseconds {
                text += " (here each segment was listed \(format(overhead, 0)) ms after the keyframe that closed it: 2 s is exactly 20 polls, so the poll's phase against the cuts stays fixed within a run and the classic figures can move by up to ±50 ms from run to run)"
            }
            text += ", so p95 is \(seconds(classic.p95Milliseconds)) against a target of \(format(targetDuration + 0.5, 1)) s."
            sentences.append(text)
        }
        if let loaded, let cpu = loaded.cpu {
            let rate = loaded.loadViewers.map { format($0.partsPerViewerPerSecondMean, 1) } ?? "about three"
            var text = "With \(loaded.viewers) LL-HLS viewers (each a blocking reload and a part download \(rate) times a second) the node used \(format(cpu.serverCores, 3)) cores"
            if let base = baseline.cpu, loaded.label != baseline.label {
                text += " against \(format(base.serverCores, 3)) with only the two measuring players, i.e. \(format((cpu.serverCores - base.serverCores) * 100 / Double(loaded.viewers), 3)) cores per 100 viewers"
            }
            text += ", RSS \(mebibytes(cpu.rssMaxKiB)) at most"
            if let viewers = loaded.loadViewers, let spread = viewers.spreadP95Milliseconds, let p95 = viewers.latencyP95Milliseconds {
                text += "; all \(viewers.viewersWithParts) viewers got each part within \(format(spread, 1)) ms (p95) of the parsing player, and their frame latency p95 was \(seconds(p95))"
            }
            text += "."
            sentences.append(text)
        }
        sentences.append("Caveats: everything runs on one \(ProcessInfo.processInfo.activeProcessorCount)-core machine over loopback (node, publisher and players share the CPUs), and availability is not playback: a player adds its hold-back (PART-HOLD-BACK \(format(partTarget * 3, 3)) s for LL-HLS, typically three target durations for classic HLS) before showing a frame.")
        return sentences.joined(separator: " ")
    }

    private static func machine() -> String {
        var model = "unknown CPU"
        if let info = ProcessCPU.readProcFile("/proc/cpuinfo") {
            for line in info.split(separator: "\n") where line.hasPrefix("model name") {
                if let colon = line.firstIndex(of: ":") {
                    model = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                break
            }
        }
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return "\(ProcessInfo.processInfo.activeProcessorCount) cores (\(model)), Linux \(release), loopback"
    }

    private static func seconds(_ milliseconds: Double) -> String {
        "\(format(milliseconds / 1000, 3)) s"
    }

    private static func mebibytes(_ kib: Int) -> String {
        "\(format(Double(kib) / 1024, 1)) MiB"
    }

    static func format(_ value: Double, _ digits: Int) -> String {
        String(format: "%.\(digits)f", value)
    }
}
