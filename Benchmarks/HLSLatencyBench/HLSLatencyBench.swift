import ArgumentParser
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// `make bench-hls`: the availability latency of classic HLS and LL-HLS as players polling
/// the playlist see it, and the node's CPU per 100 LL-HLS viewers.
@main
struct HLSLatencyBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hls-latency-bench",
        abstract: "Publish an FLV over RTMP and measure when its frames become available over HLS and LL-HLS.",
        subcommands: [Run.self, Report.self],
        defaultSubcommand: Run.self
    )

    static func log(_ line: String) {
        FileHandle.standardError.write(Data(("[hls-latency-bench] " + line + "\n").utf8))
    }
}

/// Everything one run measured; `report` turns runs into markdown.
struct RunReport: Codable, Sendable {
    var label: String
    var viewers: Int
    var date: String
    var publishSeconds: Double
    var skipSeconds: Double
    var windowSeconds: Double
    var videoFramesSent: Int
    var publisherMaxLatenessMilliseconds: Double
    var partTargetSeconds: Double?
    var targetDurationSeconds: Double?
    var llhls: LatencyFigures?
    var classic: LatencyFigures?
    var llhlsRequests: Int
    var llhlsEmptyResponses: Int
    var loadViewers: ViewerFigures?
    var cpu: CPUFigures?
    /// HTTP-FLV (`--flv-url`): the measuring viewer's latency, and the load viewers' bytes.
    var flv: LatencyFigures?
    var flvViewers: Int?
    var flvViewerBytes: Int?
    /// `--rtmp-play`: an RTMP viewer's latency.
    var rtmp: LatencyFigures?
    /// How the publisher reached the node: "rtmp", or "srt" (`--srt-publish-url`).
    var ingest: String?
    /// `--tier-url`: a chain of nodes (origin, edge, edge of the edge…), one measuring
    /// HTTP-FLV viewer each, and what each tier adds to the one before.
    var tiers: [TierFigures]?
    var errors: [String]
}

/// One tier of a chain: its viewer's latency, and per frame what it adds to the tier before.
struct TierFigures: Codable, Sendable {
    var url: String
    var latency: LatencyFigures?
    /// Frames in the window both this tier's and the previous tier's viewers received.
    var framesCompared: Int
    /// This tier's arrival − the previous tier's, per frame (the first tier: − the write).
    var addedP50Milliseconds: Double?
    var addedP99Milliseconds: Double?
    var addedMaxMilliseconds: Double?
}

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Publish, play with one LL-HLS and one classic HLS player (plus N load viewers), measure."
    )

    @Option(name: .customLong("rtmp-url"), help: "rtmp://host:port/app/name to publish to.")
    var rtmpURL: String

    @Option(name: .customLong("http-url"), help: "http://host:port of the node's HTTP listener.")
    var httpURL: String

    @Option(help: "The FLV file to publish (looped if shorter than --duration).")
    var flv: String

    @Option(help: "Seconds to publish.")
    var duration = 30.0

    @Option(help: "Seconds at the start left out of the figures (joining, first segments).")
    var skip = 4.0

    @Option(help: "Seconds at the end left out of the figures (the last segment closes only at the end).")
    var tail = 4.0

    @Option(help: "LL-HLS load viewers (blocking reload + download of every part, no parsing).")
    var viewers = 0

    @Option(name: .customLong("ramp-ms"), help: "Delay between two load viewers' starts, milliseconds.")
    var rampMilliseconds = 10.0

    @Option(name: .customLong("poll-ms"), help: "Classic player's playlist polling interval, milliseconds.")
    var pollMilliseconds = 100.0

    @Option(name: .customLong("flv-url"), help: "http://host:port of a node to play /app/name.flv from (the relay in a cluster); adds an HTTP-FLV latency player.")
    var flvURL: String?

    @Option(name: .customLong("tier-url"), help: "http://host:port of a node in a chain (origin, then its edge, then that edge's edge…); each gets a measuring HTTP-FLV viewer. Repeat in chain order.")
    var tierURLs: [String] = []

    @Option(name: .customLong("flv-viewers"), help: "HTTP-FLV load viewers on --flv-url (bytes counted, not parsed).")
    var flvViewers = 0

    @Flag(name: .customLong("rtmp-play"), help: "Add a measuring RTMP player of --rtmp-url.")
    var rtmpPlay = false

    @Option(name: .customLong("srt-publish-url"), help: "srt://host:port: publish over SRT (MPEG-TS, stream id publish:app/name from --rtmp-url) instead of RTMP.")
    var srtPublishURL: String?

    @Option(name: .customLong("srt-latency-ms"), help: "SRT latency (SRTO_LATENCY) of the SRT publisher, milliseconds.")
    var srtLatencyMilliseconds: Int32 = 120

    @Flag(inversion: .prefixedNo, help: "Run the HLS and LL-HLS players.")
    var hls = true

    @Option(name: .customLong("server-pid"), help: "The node's process id, for CPU and RSS from /proc.")
    var serverPID: Int32?

    @Option(help: "Event loop threads of the benchmark.")
    var threads = 1

    @Option(help: "Name of the run in the report.")
    var label = ""

    @Option(name: .customLong("json-out"), help: "Write the JSON result here (default: stdout).")
    var jsonOut: String?

    mutating func validate() throws {
        guard (5...3600).contains(duration) else { throw ValidationError("--duration must be in 5...3600") }
        guard skip >= 0, tail >= 0, duration - skip - tail >= 1 else { throw ValidationError("--skip and --tail leave no window") }
        guard (0...10_000).contains(viewers) else { throw ValidationError("--viewers must be in 0...10000") }
        guard (0...1000).contains(rampMilliseconds) else { throw ValidationError("--ramp-ms must be in 0...1000") }
        guard (10...5000).contains(pollMilliseconds) else { throw ValidationError("--poll-ms must be in 10...5000") }
        guard (1...16).contains(threads) else { throw ValidationError("--threads must be in 1...16") }
    }

    private enum Outcome: Sendable {
        case published(PublishResult)
        case publishFailed(String)
        case lowLatency(PlayerResult)
        case classic(PlayerResult)
        case viewer(LightViewer.Result)
        case cpu(CPUFigures?)
        case flv(FLVPlayerHandler.Result)
        case flvViewer(FLVPlayerHandler.Result)
        case tier(Int, FLVPlayerHandler.Result)
        case rtmp(FLVPlayerHandler.Result)
    }

    func run() async throws {
        let rtmp = try RTMPTarget(rtmpURL)
        let http = try HTTPTarget(httpURL)
        let source = try FLVSource(path: flv)
        HLSLatencyBench.log("source: \(source.tags.count) tags, \(String(format: "%.1f", source.seconds)) s; publishing \(duration) s to \(rtmpURL)")
        let base = "/\(rtmp.app)/\(rtmp.streamName)/src/"
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let registry = ConnectionRegistry()
        let clock = ContinuousClock()
        let begin = clock.now
        // A backstop only: the run closes every connection shortly after publishing ends.
        let stopAt = begin + .seconds(duration + 20)
        let durationMilliseconds = Int64(duration * 1000)
        let publishStart = NIOLockedValueBox<ContinuousClock.Instant?>(nil)
        let publisher = Publisher(
            host: rtmp.host, port: rtmp.port, app: rtmp.app, streamName: rtmp.streamName,
            source: source, durationMilliseconds: durationMilliseconds, group: group
        )
        let srtPublisher = try srtPublishURL.map { url in
            let (host, port, _) = try splitURL(url, scheme: "srt", defaultPort: 9000)
            return SRTPublisher(
                host: host, port: port, streamID: "publish:\(rtmp.app)/\(rtmp.streamName)", latencyMilliseconds: srtLatencyMilliseconds,
                source: source, durationMilliseconds: durationMilliseconds
            )
        }
        var rtmpResult: FLVPlayerHandler.Result?
        let rtmpPlay = rtmpPlay

        var published: PublishResult?
        var failure: String?
        var lowLatency = PlayerResult()
        var classic = PlayerResult()
        var viewerResults: [LightViewer.Result] = []
        var flvResult: FLVPlayerHandler.Result?
        var flvViewerBytes = 0
        var flvViewerErrors = 0
        var cpu: CPUFigures?
        let flvTarget = try flvURL.map { try HTTPTarget($0) }
        let tierTargets = try tierURLs.map { try HTTPTarget($0) }
        var tierResults: [Int: FLVPlayerHandler.Result] = [:]
        let flvPath = "/\(rtmp.app)/\(rtmp.streamName).flv"
        let flvViewers = flvViewers
        let hls = hls
        let skip = skip, tail = tail, duration = duration, viewers = viewers, serverPID = serverPID
        let ramp = Duration.milliseconds(Int64(rampMilliseconds * 1000)) / 1000
        let poll = Duration.milliseconds(Int64(pollMilliseconds))

        await withTaskGroup(of: Outcome.self) { tasks in
            tasks.addTask {
                do {
                    let onStart: @Sendable (ContinuousClock.Instant) -> Void = { start in publishStart.withLockedValue { $0 = start } }
                    if let srtPublisher { return .published(try await srtPublisher.run(onStart: onStart)) }
                    return .published(try await publisher.run(onStart: onStart))
                } catch {
                    return .publishFailed("\(error)")
                }
            }
            if let flvTarget {
                tasks.addTask {
                    // Joins once the stream exists (the first tags are cached GOP, outside the window).
                    try? await Task.sleep(for: .milliseconds(1000))
                    return .flv(await FLVPlayer.runOnceLive(host: flvTarget.host, port: flvTarget.port, path: flvPath, group: group, registry: registry, stopAt: stopAt))
                }
                for index in 0..<flvViewers {
                    tasks.addTask {
                        try? await Task.sleep(for: .milliseconds(1000) + ramp * index)
                        return .flvViewer(await FLVPlayer.run(host: flvTarget.host, port: flvTarget.port, path: flvPath, records: false, group: group, registry: registry, stopAt: stopAt))
                    }
                }
            }
            if rtmpPlay {
                tasks.addTask {
                    try? await Task.sleep(for: .milliseconds(1000))
                    return .rtmp(await RTMPPlayer.run(url: rtmp, group: group, registry: registry, stopAt: stopAt))
                }
            }
            for (index, target) in tierTargets.enumerated() {
                tasks.addTask {
                    // Joins once the stream exists (an edge then pulls it on this request).
                    try? await Task.sleep(for: .milliseconds(1000))
                    return .tier(index, await FLVPlayer.runOnceLive(host: target.host, port: target.port, path: flvPath, group: group, registry: registry, stopAt: stopAt))
                }
            }
            if hls { tasks.addTask {
                let player = LowLatencyPlayer(base: base, stopAt: stopAt, registry: registry)
                do {
                    return .lowLatency(try await HTTPSession.with(host: http.host, port: http.port, group: group, registry: registry) { await player.run(&$0) })
                } catch {
                    return .lowLatency(PlayerResult(errors: ["connect: \(error)"]))
                }
            } }
            if hls { tasks.addTask {
                let player = ClassicPlayer(base: base, stopAt: stopAt, registry: registry, interval: poll)
                do {
                    return .classic(try await HTTPSession.with(host: http.host, port: http.port, group: group, registry: registry) { await player.run(&$0) })
                } catch {
                    return .classic(PlayerResult(errors: ["connect: \(error)"]))
                }
            } }
            for index in 0..<viewers {
                tasks.addTask {
                    // Viewers join once the first parts exist (they poll for the playlist), spread out.
                    try? await Task.sleep(for: .milliseconds(500) + ramp * index)
                    let viewer = LightViewer(base: base, stopAt: stopAt, registry: registry)
                    do {
                        return .viewer(try await HTTPSession.with(host: http.host, port: http.port, group: group, registry: registry) { await viewer.run(&$0) })
                    } catch {
                        return .viewer(LightViewer.Result(errors: ["connect: \(error)"]))
                    }
                }
            }
            if let serverPID {
                tasks.addTask {
                    // Wait (bounded) for the publisher to start, then measure the window.
                    for _ in 0..<1000 {
                        if publishStart.withLockedValue({ $0 }) != nil { break }
                        try? await Task.sleep(for: .milliseconds(10))
                    }
                    guard let start = publishStart.withLockedValue({ $0 }) else { return .cpu(nil) }
                    return .cpu(await measureServer(pid: serverPID, from: start + .seconds(skip), to: start + .seconds(duration - tail)))
                }
            }
            // Every child ends: players by their stop time or when the connections close.
            while let outcome = await tasks.next() {
                switch outcome {
                case .published(let result):
                    published = result
                    HLSLatencyBench.log("published \(result.frames.count) video frames; closing players in 1.5 s")
                    tasks.addTask {
                        // The last parts and segments of the window are long listed by now.
                        try? await Task.sleep(for: .milliseconds(1500))
                        registry.closeAll()
                        return .cpu(nil)
                    }
                case .publishFailed(let message):
                    failure = message
                    HLSLatencyBench.log("publisher failed: \(message)")
                    registry.closeAll()
                case .lowLatency(let result): lowLatency = result
                case .classic(let result): classic = result
                case .viewer(let result): viewerResults.append(result)
                case .cpu(let figures): if let figures { cpu = figures }
                case .flv(let result): flvResult = result
                case .tier(let index, let result): tierResults[index] = result
                case .rtmp(let result): rtmpResult = result
                case .flvViewer(let result):
                    flvViewerBytes += result.bodyBytes
                    if !result.errors.isEmpty || result.status != 200 { flvViewerErrors += 1 }
                }
            }
        }
        try await group.shutdownGracefully()

        guard let published else { throw BenchError.message("publishing failed: \(failure ?? "?")") }
        let window = Int64(skip * 1000)..<Int64((duration - tail) * 1000)
        let analysis = Analysis(sent: published.frames, window: window)
        var errors = lowLatency.errors.map { "LL-HLS player: \($0)" } + classic.errors.map { "classic player: \($0)" }
        if let failure { errors.append("publisher: \(failure)") }
        var report = RunReport(
            label: label.isEmpty ? "\(viewers) viewers" : label,
            viewers: viewers,
            date: ISO8601DateFormatter().string(from: Date()),
            publishSeconds: duration,
            skipSeconds: skip,
            windowSeconds: duration - skip - tail,
            videoFramesSent: published.frames.count,
            publisherMaxLatenessMilliseconds: published.maxLatenessMilliseconds,
            partTargetSeconds: lowLatency.partTarget,
            targetDurationSeconds: classic.targetDuration ?? lowLatency.targetDuration,
            llhls: analysis.latency(of: lowLatency),
            classic: analysis.latency(of: classic),
            llhlsRequests: lowLatency.requests,
            llhlsEmptyResponses: lowLatency.emptyResponses,
            cpu: cpu,
            errors: errors
        )
        report.ingest = srtPublisher == nil ? "rtmp" : "srt"
        if let rtmpResult {
            report.rtmp = analysis.latency(of: PlayerResult(frames: rtmpResult.frames))
            report.errors += rtmpResult.errors.map { "RTMP player: \($0)" }
        }
        if let flvResult {
            report.flv = analysis.latency(of: PlayerResult(frames: flvResult.frames))
            report.flvViewers = flvViewers
            report.flvViewerBytes = flvViewerBytes
            report.errors += flvResult.errors.map { "HTTP-FLV player: \($0)" }
            if flvViewerErrors > 0 { report.errors.append("\(flvViewerErrors) HTTP-FLV load viewers failed") }
        }
        if !tierTargets.isEmpty {
            var tiers: [TierFigures] = []
            var previous: [Int64: ContinuousClock.Instant]?
            for (index, url) in tierURLs.enumerated() {
                let result = tierResults[index] ?? FLVPlayerHandler.Result()
                report.errors += result.errors.map { "tier \(index) (\(url)): \($0)" }
                var arrivals: [Int64: ContinuousClock.Instant] = [:]
                for frame in result.frames where arrivals[frame.pts] == nil { arrivals[frame.pts] = frame.availableAt }
                var added: [Double] = []
                for frame in analysis.framesInWindow {
                    guard let arrival = arrivals[frame.pts] else { continue }
                    let before = previous.map { $0[frame.pts] } ?? frame.sentAt
                    guard let before else { continue }
                    added.append((arrival - before).milliseconds)
                }
                added.sort()
                tiers.append(TierFigures(
                    url: url, latency: analysis.latency(of: PlayerResult(frames: result.frames)), framesCompared: added.count,
                    addedP50Milliseconds: percentile(added, 0.5), addedP99Milliseconds: percentile(added, 0.99), addedMaxMilliseconds: added.last
                ))
                previous = arrivals
            }
            report.tiers = tiers
        }
        if viewers > 0 {
            let start = published.startedAt
            report.loadViewers = analysis.viewers(viewerResults, reference: lowLatency, from: start + .seconds(skip), to: start + .seconds(duration - tail))
        }
        HLSLatencyBench.log(Self.summary(report))

        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(report)
        if let jsonOut {
            try data.write(to: URL(fileURLWithPath: jsonOut))
        } else {
            print(String(decoding: data, as: UTF8.self))
        }
    }

    static func summary(_ report: RunReport) -> String {
        func figures(_ name: String, _ latency: LatencyFigures?) -> String {
            guard let latency else { return "\(name): no frames" }
            return "\(name): matched \(latency.framesMatched)/\(latency.framesInWindow), p50 \(Int(latency.p50Milliseconds)) ms, p95 \(Int(latency.p95Milliseconds)) ms, max \(Int(latency.maxMilliseconds)) ms"
        }
        var lines = ["\(report.label): " + figures("LL-HLS", report.llhls), figures("classic", report.classic)]
        if report.flv != nil || report.flvViewers != nil {
            lines.append(figures("HTTP-FLV", report.flv) + ", p99 \(Int(report.flv?.p99Milliseconds ?? 0)) ms")
        }
        if let rtmp = report.rtmp {
            lines.append(figures("RTMP (\(report.ingest ?? "rtmp") ingest)", rtmp) + ", p99 \(Int(rtmp.p99Milliseconds)) ms")
        }
        for (index, tier) in (report.tiers ?? []).enumerated() {
            lines.append("tier \(index) " + figures(tier.url, tier.latency) + ", adds p50 \(Int(tier.addedP50Milliseconds ?? -1)) ms p99 \(Int(tier.addedP99Milliseconds ?? -1)) ms over \(tier.framesCompared) frames")
        }
        if let cpu = report.cpu {
            lines.append("node CPU \(String(format: "%.3f", cpu.serverCores)) cores, RSS \(cpu.rssMaxKiB / 1024) MiB")
        }
        if let viewers = report.loadViewers {
            lines.append("viewers: \(viewers.viewersWithParts)/\(viewers.viewers) with parts, \(String(format: "%.2f", viewers.partsPerViewerPerSecondMean)) parts/s each, \(viewers.errors) errors")
        }
        if !report.errors.isEmpty { lines.append("errors: \(report.errors.prefix(5))") }
        return lines.joined(separator: "; ")
    }
}

/// `rtmp://host:port/app/name`.
struct RTMPTarget: Sendable {
    var host: String
    var port: Int
    var app: String
    var streamName: String

    init(_ text: String) throws {
        let (host, port, path) = try splitURL(text, scheme: "rtmp", defaultPort: 1935)
        let parts = path.split(separator: "/")
        guard parts.count == 2 else { throw ValidationError("\(text): want rtmp://host:port/app/name") }
        self.host = host
        self.port = port
        self.app = String(parts[0])
        self.streamName = String(parts[1])
    }
}

/// `http://host:port`.
struct HTTPTarget: Sendable {
    var host: String
    var port: Int

    init(_ text: String) throws {
        (host, port, _) = try splitURL(text, scheme: "http", defaultPort: 80)
    }
}

private func splitURL(_ text: String, scheme: String, defaultPort: Int) throws -> (String, Int, String) {
    let prefix = scheme + "://"
    guard text.hasPrefix(prefix) else { throw ValidationError("\(text): expected \(prefix)") }
    let rest = text.dropFirst(prefix.count)
    let authority = rest.prefix { $0 != "/" }
    let path = String(rest.dropFirst(authority.count))
    guard let colon = authority.lastIndex(of: ":") else { return (String(authority), defaultPort, path) }
    guard let port = Int(authority[authority.index(after: colon)...]), (1...65535).contains(port) else {
        throw ValidationError("\(text): bad port")
    }
    return (String(authority[..<colon]), port, path)
}
