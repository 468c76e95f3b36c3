import ArgumentParser
import Foundation
import Media
import NIOCore
import NIOPosix
import NIOSSL
import RTMP

/// The fan-out load generator: many RTMP and HTTP-FLV viewers of one stream in one process,
/// and the server's CPU and memory read from /proc while they watch.
///
/// Phases: baseline RSS (publisher on, no viewers) → connect viewers with a small ramp → wait
/// until all have a first frame (or `--first-frame-timeout`) → measure for `--duration`.
@main
struct FanoutBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fanout-bench",
        abstract: "Attach many RTMP and HTTP-FLV viewers to one live stream and measure the server.",
        discussion: """
            Server CPU and memory come from /proc of --server-pid and all its descendants \
            (nginx's workers), so the generator's own CPU never enters them.
            """
    )

    @Option(name: .customLong("rtmp-url"), help: "rtmp://host:port/app/name to play.")
    var rtmpURL: String?

    @Option(name: .customLong("flv-url"), help: "http://host:port/app/name.flv to play.")
    var flvURL: String?

    @Option(name: .customLong("rtmp-viewers"), help: "RTMP viewers to attach.")
    var rtmpViewers = 0

    @Option(name: .customLong("flv-viewers"), help: "HTTP-FLV viewers to attach.")
    var flvViewers = 0

    @Option(name: .customLong("srt-url"), help: "srt://host:port of an SRT listener to play from (with --srt-stream-id).")
    var srtURL: String?

    @Option(name: .customLong("srt-stream-id"), help: "The SRT stream id that names the stream to play (read:app/name).")
    var srtStreamID = ""

    @Option(name: .customLong("srt-viewers"), help: "SRT viewers to attach (alone: not with RTMP or HTTP-FLV viewers).")
    var srtViewers = 0

    @Option(help: "Length of the measurement window in seconds.")
    var duration = 20.0

    @Option(name: .customLong("server-pid"), help: "Server process id (repeatable); descendants are included.")
    var serverPIDs: [Int32] = []

    @Option(name: .customLong("ramp-ms"), help: "Delay between two connects, in milliseconds.")
    var rampMilliseconds = 2.0

    @Option(name: .customLong("first-frame-timeout"), help: "Seconds to wait for every viewer's first frame.")
    var firstFrameTimeout = 10.0

    @Option(
        name: .customLong("first-frame"),
        help: "The track whose first coded frame counts as a viewer's first frame: video, or audio for an audio-only stream."
    )
    var firstFrameTrack: FirstFrameTrack = .video

    @Option(help: "Event loop threads of the generator.")
    var threads = 1

    @Option(help: "Name of the server in the output.")
    var label = ""

    @Flag(help: "Print one JSON object on stdout (the human line goes to stderr).")
    var json = false

    mutating func validate() throws {
        guard self.rtmpViewers >= 0, self.flvViewers >= 0, self.srtViewers >= 0, self.rtmpViewers + self.flvViewers + self.srtViewers > 0 else {
            throw ValidationError("need at least one viewer")
        }
        guard self.srtViewers == 0 || (self.rtmpViewers + self.flvViewers == 0 && self.srtURL != nil) else {
            throw ValidationError("--srt-viewers needs --srt-url, and runs alone")
        }
        guard self.rtmpViewers == 0 || self.rtmpURL != nil else { throw ValidationError("--rtmp-viewers needs --rtmp-url") }
        guard self.flvViewers == 0 || self.flvURL != nil else { throw ValidationError("--flv-viewers needs --flv-url") }
        guard self.duration > 0, self.duration <= 3600 else { throw ValidationError("--duration must be in (0, 3600]") }
        guard (0...1000).contains(self.rampMilliseconds) else { throw ValidationError("--ramp-ms must be in 0...1000") }
        guard (0.1...600).contains(self.firstFrameTimeout) else { throw ValidationError("--first-frame-timeout must be in 0.1...600") }
        guard (1...64).contains(self.threads) else { throw ValidationError("--threads must be in 1...64") }
    }

    func run() async throws {
        if self.srtViewers > 0, let srtURL {
            try await self.runSRT(srtURL)
            return
        }
        var plan: [ViewerTarget] = []
        if let rtmpURL, self.rtmpViewers > 0 {
            let url = try RTMPURL(parsing: rtmpURL)
            let address = try SocketAddress.makeAddressResolvingHost(url.host, port: url.port)
            plan.append(contentsOf: repeatElement(.rtmp(url, address), count: self.rtmpViewers))
        }
        if let flvURL, self.flvViewers > 0 {
            let url = try HTTPURL(parsing: flvURL)
            let address = try SocketAddress.makeAddressResolvingHost(url.host, port: url.port)
            // Interleave the kinds so both see the same load while connecting.
            var mixed: [ViewerTarget] = []
            let flv = repeatElement(ViewerTarget.httpFLV(url, address), count: self.flvViewers)
            var rtmp = plan[...]
            for target in flv {
                if let next = rtmp.popFirst() { mixed.append(next) }
                mixed.append(target)
            }
            mixed.append(contentsOf: rtmp)
            plan = mixed
        }

        let limit = FileDescriptorLimit.raise(toAtLeast: plan.count + 256)
        if limit < plan.count + 64 {
            Self.log("warning: open-file limit \(limit) is below \(plan.count) viewers; raise it with ulimit -n")
        }

        var server = ServerProcesses(roots: self.serverPIDs)
        server.discover()
        let baselineRSS = server.residentKiB()

        let group = MultiThreadedEventLoopGroup(numberOfThreads: self.threads)
        let report: BenchmarkReport
        do {
            report = try await self.measure(plan: plan, group: group, server: server, baselineRSS: baselineRSS)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        try await group.shutdownGracefully()

        if self.json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let data = try encoder.encode(report)
            print(String(decoding: data, as: UTF8.self))
            Self.log(report.summary)
        } else {
            print(report.summary)
        }
    }

    private func measure(
        plan: [ViewerTarget],
        group: MultiThreadedEventLoopGroup,
        server: ServerProcesses,
        baselineRSS: Int
    ) async throws -> BenchmarkReport {
        var slots: [LoopSlot] = []
        for loop in group.makeIterator() {
            let registry = try await loop.submit { NIOLoopBound(ViewerRegistry(), eventLoop: loop) }.get()
            slots.append(LoopSlot(loop: loop, registry: registry))
        }

        var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
        tlsConfiguration.certificateVerification = .none
        let tls = try NIOSSLContext(configuration: tlsConfiguration)
        // Connect with a ramp so the server's accept queue is not what is measured.
        let rampNanoseconds = UInt64(self.rampMilliseconds * 1_000_000)
        var connects: [EventLoopFuture<any Channel>] = []
        connects.reserveCapacity(plan.count)
        for (id, target) in plan.enumerated() {
            connects.append(
                Self.connect(id: id, target: target, slot: slots[id % slots.count], firstFrameTrack: self.firstFrameTrack, tls: tls)
            )
            if rampNanoseconds > 0 { try await Task.sleep(nanoseconds: rampNanoseconds) }
        }
        var channels: [any Channel] = []
        var connectFailures = 0
        var reasons: [String: Int] = [:]
        for connect in connects {
            do {
                channels.append(try await connect.get())
            } catch {
                connectFailures += 1
                reasons["connect: \(error)", default: 0] += 1
            }
        }

        // Wait (bounded) until every viewer has its first frame or is gone.
        let pollNanoseconds: UInt64 = 50_000_000
        let polls = Int(self.firstFrameTimeout * 1e9 / Double(pollNanoseconds)) + 1
        for _ in 0..<polls {
            let totals = try await Self.totals(slots)
            if totals.waiting == 0 { break }
            try await Task.sleep(nanoseconds: pollNanoseconds)
        }

        // The window.
        var server = server
        server.discover()
        let startViewers = try await Self.snapshots(slots)
        let startCPU = server.cpuTicks()
        let startGenerator = GeneratorCPU.seconds()
        let startMachine = MachineCPU.busySeconds()
        let start = NIODeadline.now().uptimeNanoseconds
        let end = start + UInt64(self.duration * 1e9)
        var rssSamples: [Int] = []
        // One RSS sample per second, and one at the end.
        for _ in 0..<(Int(self.duration.rounded(.up)) + 1) {
            let now = NIODeadline.now().uptimeNanoseconds
            guard now < end else { break }
            try await Task.sleep(nanoseconds: min(1_000_000_000, end - now))
            rssSamples.append(server.residentKiB())
        }
        let endViewers = try await Self.snapshots(slots)
        let endCPU = server.cpuTicks()
        let endGenerator = GeneratorCPU.seconds()
        let endMachine = MachineCPU.busySeconds()
        let stop = NIODeadline.now().uptimeNanoseconds

        for channel in channels { channel.close(promise: nil) }
        let serverCPUSeconds = ServerProcesses.cpuSeconds(from: startCPU, to: endCPU)
        var otherCPUSeconds: Double?
        if let startMachine, let endMachine {
            otherCPUSeconds = max(0, endMachine - startMachine - serverCPUSeconds - (endGenerator - startGenerator))
        }

        return self.report(
            startViewers: startViewers,
            endViewers: endViewers,
            windowNanoseconds: stop - start,
            stop: stop,
            serverCPUSeconds: serverCPUSeconds,
            generatorCPUSeconds: endGenerator - startGenerator,
            otherCPUSeconds: otherCPUSeconds,
            server: server,
            baselineRSS: baselineRSS,
            rssSamples: rssSamples,
            connectFailures: connectFailures,
            reasons: reasons
        )
    }

    private func report(
        startViewers: [ViewerSnapshot],
        endViewers: [ViewerSnapshot],
        windowNanoseconds: UInt64,
        stop: UInt64,
        serverCPUSeconds: Double,
        generatorCPUSeconds: Double,
        otherCPUSeconds: Double?,
        server: ServerProcesses,
        baselineRSS: Int,
        rssSamples: [Int],
        connectFailures: Int,
        reasons: [String: Int]
    ) -> BenchmarkReport {
        let window = Double(windowNanoseconds) / 1e9
        let viewerCount = self.rtmpViewers + self.flvViewers
        let startByID = Dictionary(startViewers.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })

        var windowBytes = 0
        var minViewerBytes = Int.max
        var stallsInWindow = 0
        var stallsTotal = 0
        var video = 0
        var audio = 0
        var maxGap: UInt64 = 0
        var ttff: [Double] = []
        var ttfk: [Double] = []
        // Every viewer is registered when its socket is created, so only a failed socket creation is missing.
        var withoutFirstFrame = max(0, viewerCount - endViewers.count)
        var closedEarly = 0
        var reasons = reasons
        var kinds: [ViewerKind: (viewers: Int, bytes: Int, ttff: [Double], stalls: Int)] = [:]
        for viewer in endViewers {
            let before = startByID[viewer.id]
            let bytes = viewer.bytes - (before?.bytes ?? 0)
            windowBytes += bytes
            minViewerBytes = min(minViewerBytes, bytes)
            video += viewer.videoMessages - (before?.videoMessages ?? 0)
            audio += viewer.audioMessages - (before?.audioMessages ?? 0)
            // A viewer silent for over the threshold at the end is in a stall that has not ended yet.
            let silentAtEnd = viewer.firstFrame != nil
                && stop &- (viewer.lastMedia ?? 0) > ViewerStats.stallThresholdNanoseconds
            stallsInWindow += viewer.stalls - (before?.stalls ?? 0) + (silentAtEnd ? 1 : 0)
            stallsTotal += viewer.stalls + (silentAtEnd ? 1 : 0)
            maxGap = max(maxGap, viewer.maxGapAfterFirstFrame, silentAtEnd ? stop &- (viewer.lastMedia ?? 0) : 0)
            if let first = viewer.firstFrame {
                ttff.append(Double(first - viewer.connectStart) / 1e6)
            } else {
                withoutFirstFrame += 1
            }
            if let first = viewer.firstKeyframe { ttfk.append(Double(first - viewer.connectStart) / 1e6) }
            kinds[viewer.kind, default: (0, 0, [], 0)].viewers += 1
            kinds[viewer.kind]?.bytes += bytes
            kinds[viewer.kind]?.stalls += viewer.stalls - (before?.stalls ?? 0) + (silentAtEnd ? 1 : 0)
            if let first = viewer.firstFrame { kinds[viewer.kind]?.ttff.append(Double(first - viewer.connectStart) / 1e6) }
            if viewer.closedAt != nil { closedEarly += 1 }
            if let failure = viewer.failure { reasons["\(viewer.kind.rawValue): \(failure)", default: 0] += 1 }
        }
        ttff.sort()
        ttfk.sort()
        let topReasons = reasons.sorted { $0.value > $1.value }.prefix(5)

        var byKind: [String: KindFigures] = [:]
        for (kind, figures) in kinds {
            let sorted = figures.ttff.sorted()
            byKind[kind.rawValue] = KindFigures(
                viewers: figures.viewers,
                meanKbitPerSecond: Double(figures.bytes) * 8 / window / 1e3 / Double(max(figures.viewers, 1)),
                ttffP50Milliseconds: percentile(sorted, 0.50),
                ttffP95Milliseconds: percentile(sorted, 0.95),
                stallsInWindow: figures.stalls
            )
        }

        let deliveredBits = Double(windowBytes) * 8
        let rssMean = rssSamples.isEmpty ? baselineRSS : rssSamples.reduce(0, +) / rssSamples.count
        return BenchmarkReport(
            label: self.label,
            rtmpViewers: self.rtmpViewers,
            flvViewers: self.flvViewers,
            generatorThreads: self.threads,
            firstFrameTrack: self.firstFrameTrack,
            serverPIDs: server.pids,
            connectFailures: connectFailures,
            viewersWithoutFirstFrame: withoutFirstFrame,
            viewersClosedEarly: closedEarly,
            failureReasons: Dictionary(uniqueKeysWithValues: topReasons.map { ($0.key, $0.value) }),
            windowSeconds: window,
            deliveredMbitPerSecond: deliveredBits / window / 1e6,
            meanViewerKbitPerSecond: deliveredBits / window / 1e3 / Double(max(viewerCount, 1)),
            minViewerKbitPerSecond: endViewers.isEmpty ? 0 : Double(minViewerBytes) * 8 / window / 1e3,
            serverCPUSeconds: serverCPUSeconds,
            serverCPUPercent: serverCPUSeconds / window * 100,
            serverCPUSecondsPerGbit: deliveredBits > 0 ? serverCPUSeconds / (deliveredBits / 1e9) : nil,
            generatorCPUPercent: generatorCPUSeconds / window * 100,
            otherCPUPercent: otherCPUSeconds.map { $0 / window * 100 },
            rssBaselineKiB: baselineRSS,
            rssWindowMeanKiB: rssMean,
            rssWindowMaxKiB: rssSamples.max() ?? baselineRSS,
            rssPerViewerKiB: Double(rssMean - baselineRSS) / Double(max(viewerCount, 1)),
            ttffP50Milliseconds: percentile(ttff, 0.50),
            ttffP95Milliseconds: percentile(ttff, 0.95),
            ttffMaxMilliseconds: ttff.last,
            ttfkP50Milliseconds: percentile(ttfk, 0.50),
            ttfkP95Milliseconds: percentile(ttfk, 0.95),
            byKind: byKind,
            stallsInWindow: stallsInWindow,
            stallsTotal: stallsTotal,
            maxGapMilliseconds: Double(maxGap) / 1e6,
            videoMessagesInWindow: video,
            audioMessagesInWindow: audio
        )
    }

    private static func connect(
        id: Int,
        target: ViewerTarget,
        slot: LoopSlot,
        firstFrameTrack: FirstFrameTrack,
        tls: NIOSSLContext
    ) -> EventLoopFuture<any Channel> {
        let connectStart = NIODeadline.now().uptimeNanoseconds
        let registry = slot.registry
        let bootstrap = ClientBootstrap(group: slot.loop)
            .connectTimeout(.seconds(5))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelOption(
                .recvAllocator,
                value: AdaptiveRecvByteBufferAllocator(minimum: 1024, initial: 16 * 1024, maximum: 256 * 1024)
            )
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let stats = ViewerStats(
                        id: id,
                        kind: target.kind,
                        connectStart: connectStart,
                        firstFrameTrack: firstFrameTrack
                    )
                    registry.value.add(stats)
                    // rtmps:// and https://: the handshake is part of the viewer's cost, as
                    // in production (the server's certificate is not checked here).
                    if target.usesTLS {
                        try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: nil))
                    }
                    switch target {
                    case .rtmp(let url, _):
                        try channel.pipeline.syncOperations.addHandlers(
                            ClientHandshakeHandler(),
                            RTMPViewerHandler(stats: stats, url: url)
                        )
                    case .httpFLV(let url, _):
                        try channel.pipeline.syncOperations.addHandler(HTTPFLVViewerHandler(stats: stats, url: url))
                    }
                }
            }
        return bootstrap.connect(to: target.address)
    }

    private static func totals(_ slots: [LoopSlot]) async throws -> ViewerRegistry.Totals {
        var totals = ViewerRegistry.Totals()
        for slot in slots {
            let registry = slot.registry
            totals = totals + (try await slot.loop.submit { registry.value.totals() }.get())
        }
        return totals
    }

    private static func snapshots(_ slots: [LoopSlot]) async throws -> [ViewerSnapshot] {
        var snapshots: [ViewerSnapshot] = []
        for slot in slots {
            let registry = slot.registry
            snapshots.append(contentsOf: try await slot.loop.submit { registry.value.snapshots() }.get())
        }
        return snapshots
    }

    private static func log(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}

/// What one viewer connects to.
enum ViewerTarget: Sendable {
    case rtmp(RTMPURL, SocketAddress)
    case httpFLV(HTTPURL, SocketAddress)

    var kind: ViewerKind {
        switch self {
        case .rtmp: return .rtmp
        case .httpFLV: return .httpFLV
        }
    }

    var address: SocketAddress {
        switch self {
        case .rtmp(_, let address), .httpFLV(_, let address): return address
        }
    }

    var usesTLS: Bool {
        switch self {
        case .rtmp(let url, _): url.tls
        case .httpFLV(let url, _): url.tls
        }
    }
}

/// An event loop and the registry of the viewers on it.
struct LoopSlot: Sendable {
    let loop: any EventLoop
    let registry: NIOLoopBound<ViewerRegistry>
}

extension FanoutBench {
    /// SRT viewers alone: the same window, server CPU and delivered bytes as the other
    /// kinds, so that CPU-s/Gbit compares across runs.
    func runSRT(_ url: String) async throws {
        guard let parsed = URLComponents(string: url), parsed.scheme == "srt", let host = parsed.host, let port = parsed.port else {
            throw ValidationError("--srt-url must be srt://host:port")
        }
        var server = ServerProcesses(roots: self.serverPIDs)
        server.discover()
        let baselineRSS = server.residentKiB()
        let viewers = SRTViewers(count: self.srtViewers)
        let ramp = Duration.nanoseconds(Int64(self.rampMilliseconds * 1_000_000))
        let streamID = self.srtStreamID
        let count = self.srtViewers
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                viewers.start(host: host, port: port, streamID: streamID, latencyMilliseconds: 120, ramp: ramp)
                done.resume()
            }
            thread.start()
        }
        // Until every viewer is connected and has bytes, or the first-frame timeout.
        let deadline = ContinuousClock.now + .milliseconds(Int64(self.firstFrameTimeout * 1000))
        while ContinuousClock.now < deadline {
            let totals = viewers.totals()
            if totals.connected + totals.failed >= count, totals.bytes > 0 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        try await Task.sleep(for: .seconds(2))
        server.discover()
        viewers.beginWindow()
        let start = viewers.totals()
        let startCPU = server.cpuTicks()
        let startGenerator = GeneratorCPU.seconds()
        let began = ContinuousClock.now
        var rss: [Int] = []
        for _ in 0..<Int(self.duration.rounded(.up)) {
            try await Task.sleep(for: .seconds(1))
            rss.append(server.residentKiB())
        }
        let end = viewers.totals()
        let endCPU = server.cpuTicks()
        let window = ContinuousClock.now - began
        let generator = GeneratorCPU.seconds() - startGenerator
        viewers.finish()
        let seconds = Double(window.components.seconds) + Double(window.components.attoseconds) / 1e18
        let cpu = ServerProcesses.cpuSeconds(from: startCPU, to: endCPU)
        let bits = Double(end.bytes - start.bytes) * 8
        let peak = rss.max() ?? baselineRSS
        let report: [String: Double] = [
            "srtViewers": Double(count), "connected": Double(end.connected), "failed": Double(end.failed), "ended": Double(end.ended),
            "stalled": Double(end.stalled), "longestWaitMilliseconds": Double(end.longestWait.milliseconds),
            "windowSeconds": seconds, "deliveredMbitPerSecond": bits / seconds / 1e6,
            "serverCPUPercent": cpu / seconds * 100, "serverCPUSecondsPerGbit": bits > 0 ? cpu / (bits / 1e9) : 0,
            "generatorCPUPercent": generator / seconds * 100,
            "rssPerViewerKiB": Double(max(0, peak - baselineRSS)) / Double(max(1, count)),
        ]
        let name = self.label.isEmpty ? "server" : self.label
        let summary = String(
            format: "%@ srt=%d: %.1f Mbit/s, server CPU %.0f%% = %.3f CPU-s/Gbit, RSS +%.1f KiB/viewer, stalls %d, failed %d, ended %d, longest wait %d ms",
            name, count, report["deliveredMbitPerSecond"] ?? 0, report["serverCPUPercent"] ?? 0, report["serverCPUSecondsPerGbit"] ?? 0,
            report["rssPerViewerKiB"] ?? 0, end.stalled, end.failed, end.ended, Int(end.longestWait.milliseconds)
        )
        if self.json {
            let data = try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
            Self.log(summary)
        } else {
            print(summary)
        }
    }
}
