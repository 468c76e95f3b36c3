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

extension IntegrationTests {
    /// Edges on hosts of their own: each node in a network namespace, 50 ms of added delay
    /// (a userspace proxy) between the origin tier and the edge tier, real players in a
    /// viewers' namespace.
    @Suite("Edges across network namespaces")
    struct EdgeNetworkTests {
        static let delayMilliseconds = 50

        @Test("Two origins behind 50 ms, two edges: ffprobe, rtmpdump and Chromium play from the edges; killing the origin an edge pulls from costs the viewer under 3 s and no disconnect")
        func edgesAcrossNamespaces() async throws {
            try await Scenario.run("edge-netns") { scenario in
                guard let net = try await NetworkTopology.up(["origin-a", "origin-b", "mid", "edge-1", "edge-2", "viewers"], scenario: scenario) else {
                    return
                }
                let media = try await MediaLibrary.shared.file(.shortGOPAudioVideo)
                let originA = try await net.startNode(in: "origin-a", label: "origin-a")
                _ = try await net.startNode(in: "origin-b", label: "origin-b")
                // The tier boundary: each origin's HTTP port behind a delay proxy in `mid`.
                let mid = try net.address("mid")
                _ = try await net.startDelayProxy(in: "mid", port: 9001, to: "\(try net.address("origin-a")):8080", delayMilliseconds: Self.delayMilliseconds, label: "delay-a")
                _ = try await net.startDelayProxy(in: "mid", port: 9002, to: "\(try net.address("origin-b")):8080", delayMilliseconds: Self.delayMilliseconds, label: "delay-b")
                let upstreams = "http://\(mid):9001,http://\(mid):9002"
                _ = try await net.startNode(in: "edge-1", label: "edge-1", arguments: ["--role", "edge", "--upstream", upstreams])
                _ = try await net.startNode(in: "edge-2", label: "edge-2", arguments: ["--role", "edge", "--upstream", upstreams])
                let edge1Address = try net.address("edge-1")
                let edge2Address = try net.address("edge-2")

                // One encoder feeding both origins, from the viewers' side of the network.
                _ = try net.launch(
                    in: "viewers", "ffmpeg",
                    ["-nostdin", "-hide_banner", "-loglevel", "warning", "-stream_loop", "-1", "-re", "-i", media.url.path,
                     "-c", "copy", "-map", "0", "-f", "tee",
                     "[f=flv:onfail=ignore]rtmp://\(try net.address("origin-a")):1935/live/cam|[f=flv:onfail=ignore]rtmp://\(try net.address("origin-b")):1935/live/cam"],
                    name: "publisher-tee"
                )
                let live = await eventually(timeout: .seconds(15), interval: .milliseconds(250)) {
                    (try? await net.status(from: "viewers", "http://\(edge1Address):8080/live/cam.flv")) == 200
                }
                try scenario.require(live, "live/cam is not playable from edge-1 within 15 s")

                // Players: an HTTP-FLV viewer (curl, its bytes sampled below) and 20 more on
                // edge-1, ffprobe over RTMP from edge-1, rtmpdump and Chromium (HLS) on edge-2.
                let flvFile = scenario.file("edge-1.flv")
                _ = try net.launch(in: "viewers", "curl", ["-sN", "-o", flvFile.path, "http://\(edge1Address):8080/live/cam.flv"], name: "curl-viewer")
                for index in 0..<20 {
                    _ = try net.launch(in: "viewers", "curl", ["-sN", "-o", "/dev/null", "http://\(edge1Address):8080/live/cam.flv"], name: "curl-\(index)")
                }
                let ffprobe = try net.launch(
                    in: "viewers", "ffprobe",
                    ["-v", "error", "-show_entries", "stream=index,codec_type:packet=stream_index,dts,pts,flags", "-of", "json",
                     "-read_intervals", "%+12", "rtmp://\(edge1Address):1935/live/cam"],
                    name: "probe-rtmp-edge-1"
                )
                let dumpFile = scenario.file("edge-2-rtmpdump.flv")
                let rtmpdump = try net.launch(in: "viewers", "rtmpdump", ["-q", "--live", "-r", "rtmp://\(edge2Address):1935/live/cam", "-o", dumpFile.path], name: "rtmpdump-edge-2")
                // Edge-2 starts segmenting HLS on its first HLS request (answered once its
                // first segment is complete); Chromium joins later, below.
                let master = try await net.status(from: "viewers", "http://\(edge2Address):8080/live/cam/llhls.m3u8", seconds: 8)
                scenario.check(master == 200, "edge-2's LL-HLS master answered \(master)")

                try await Task.sleep(for: .seconds(4))
                let pulls = try await net.run(in: "edge-1", "ss", ["-Htn", "state", "established", "( dport = :9001 or dport = :9002 )"], name: "ss-edge-1", timeout: .seconds(5))
                let upstreamSockets = pulls.stdout.split(separator: "\n").filter { !$0.isEmpty }.count
                scenario.check(upstreamSockets == 1, "22 players on edge-1 hold \(upstreamSockets) upstream connections, expected 1")
                let before = FLVStream.parse(Array((try? Data(contentsOf: flvFile)) ?? Data()))
                scenario.check(before.videoFrames.count >= 30, "edge-1's HTTP-FLV viewer got \(before.videoFrames.count) video frames in 4 s")

                // Kill origin A; watch the viewer's frame count.
                originA.send(signal: SIGKILL)
                let longestStall = try await longestWait(for: .seconds(6), every: .milliseconds(100), from: before.videoFrames.count) {
                    FLVStream.parse(Array((try? Data(contentsOf: flvFile)) ?? Data())).videoFrames.count
                }
                scenario.note("origin A killed: the edge-1 viewer waited at most \(longestStall) for a video frame")
                scenario.check(longestStall < .seconds(3), "edge-1's viewer saw no video for \(longestStall) after its origin died (target < 3 s)")
                let toB = try await net.run(in: "edge-1", "ss", ["-Htn", "state", "established", "( dport = :9002 )"], name: "ss-edge-1-b", timeout: .seconds(5))
                scenario.check(toB.stdout.split(separator: "\n").filter { !$0.isEmpty }.count == 1, "edge-1 does not pull from origin B after the failover: \(toB.stdout)")

                let flv = FLVStream.parse(Array(try Data(contentsOf: flvFile)))
                scenario.checkContinuousTimeline(flv, "edge-1's HTTP-FLV viewer")

                // ffprobe (RTMP, edge-1) through the failover.
                let probe = await ffprobe.finish(timeout: .seconds(15))
                scenario.check(probe.succeeded, "ffprobe over RTMP from edge-1: \(probe)")
                if probe.succeeded {
                    let report = try ProbeReport.decode(probe.stdout)
                    scenario.check(report.packets(of: report.video).count >= 150, "ffprobe got \(report.packets(of: report.video).count) video packets from edge-1 in 12 s")
                    scenario.check(report.dtsRegressions(of: report.video).isEmpty, "RTMP DTS regressions at edge-1: \(report.dtsRegressions(of: report.video).prefix(5))")
                }
                // Chromium (LL-HLS, edge-2, after the failover): the picture advances. It joins
                // while rtmpdump still watches edge-2, so the edge's pull is not stopped as
                // unwatched in the seconds Chromium takes to start (it was, once: Chromium then
                // met a rendition begun anew). It joins a rendition some segments old: its
                // native player cannot start one that has a single segment, on any node (an
                // issue of its own).
                if BrowserSupport.missing == nil, let script = BrowserSupport.script {
                    // Right after the failover edge-2's playlist can answer 404 for a moment (seen
                    // once in a full run), and for a while its window spans the failover's
                    // discontinuity, which Chromium's native player fails to parse
                    // (DEMUXER_ERROR_COULD_NOT_PARSE, seen once: an issue of its own). Chromium
                    // joins once the media playlist is served without a discontinuity.
                    let base = "http://\(edge2Address):8080/live/cam"
                    var lastPlaylist = ""
                    let served = await eventually(timeout: .seconds(40), interval: .seconds(1)) {
                        guard let master = try? await net.run(in: "viewers", "curl", ["-sf", "--max-time", "2", "\(base)/llhls.m3u8"], name: "curl-master", timeout: .seconds(5)),
                              master.succeeded,
                              let media = master.stdout.split(separator: "\n").first(where: { !$0.hasPrefix("#") && !$0.isEmpty }),
                              let playlist = try? await net.run(in: "viewers", "curl", ["-sf", "--max-time", "2", "\(base)/\(media)"], name: "curl-media", timeout: .seconds(5)),
                              playlist.succeeded
                        else { return false }
                        lastPlaylist = playlist.stdout
                        return playlist.stdout.contains("#EXTINF") && !playlist.stdout.contains("#EXT-X-DISCONTINUITY")
                    }
                    scenario.check(served, "edge-2 did not serve an LL-HLS window clear of the failover within 40 s:\n\(lastPlaylist.suffix(600))")
                    try await Task.sleep(for: .seconds(2))
                    let browser = try net.launch(
                        in: "viewers", executable: try TestEnvironment.python3(),
                        [script.path, "http://\(edge2Address):8080/live/cam/llhls.m3u8", scenario.file("edge-2-chromium.png").path,
                         "--advance", "3", "--within", "8", "--start-timeout", "15"],
                        name: "chromium-hls-edge-2"
                    )
                    let played = await browser.finish(timeout: .seconds(40))
                    scenario.check(played.succeeded, "Chromium did not play LL-HLS from edge-2: \(played)")
                    scenario.note("Chromium on edge-2: \(played.stdout.trimmingCharacters(in: .whitespacesAndNewlines))")
                } else {
                    scenario.note("Chromium not run: \(BrowserSupport.missing ?? "play_hls.py not found")")
                }
                // rtmpdump (librtmp, edge-2), which stayed through the failover and Chromium's play
                // (so edge-2's pull was watched throughout): what it wrote decodes.
                rtmpdump.send(signal: SIGINT)
                _ = await rtmpdump.waitForExit(timeout: .seconds(5))
                let (decode, dumped) = try await scenario.decodeCheck(dumpFile, name: "decode-rtmpdump")
                let decodedFrames = dumped?.video?.readFrames ?? 0
                scenario.check(decode.succeeded && decodedFrames >= 100, "rtmpdump's recording from edge-2 decodes to \(decodedFrames) video frames (expected 100+): \(decode)")
                scenario.note("rtmpdump from edge-2: \(decodedFrames) video frames decoded")
            }
        }
        @Test("Across namespaces with 50 ms between them: a forward pushes a stream to a second node, which plays it; that node is drained, and the forward (an Enhanced RTMP v2 publisher) moves to a third node, which plays it; the drained node exits")
        func forwardAndDrainAcrossNamespaces() async throws {
            try await Scenario.run("forward-drain-netns") { scenario in
                guard let net = try await NetworkTopology.up(["origin", "target", "backup", "mid", "clients"], scenario: scenario) else {
                    return
                }
                let media = try await MediaLibrary.shared.file(.shortGOPAudioVideo)
                let mid = try net.address("mid")
                let targetAddress = try net.address("target")
                let backupAddress = try net.address("backup")
                let token = "netns-drain"
                // The forward's path to the target crosses the delay proxy.
                _ = try await net.startDelayProxy(in: "mid", port: 9003, to: "\(targetAddress):1935", delayMilliseconds: Self.delayMilliseconds, label: "delay-rtmp")
                let target = try await net.startNode(in: "target", label: "target", config: NodeConfig(drainGraceSeconds: 30), arguments: ["--admin-token", token])
                _ = try await net.startNode(in: "backup", label: "backup")
                _ = try await net.startNode(in: "origin", label: "origin", config: NodeConfig(forwards: ["live": ["rtmp://\(mid):9003/relayed"]]))
                _ = try net.launch(
                    in: "clients", "ffmpeg",
                    ["-nostdin", "-hide_banner", "-loglevel", "warning", "-stream_loop", "-1", "-re", "-i", media.url.path, "-c", "copy", "-f", "flv",
                     "rtmp://\(try net.address("origin")):1935/live/cam"],
                    name: "publisher"
                )
                let forwarded = await eventually(timeout: .seconds(20), interval: .milliseconds(250)) {
                    (try? await net.status(from: "clients", "http://\(targetAddress):8080/relayed/cam.flv")) == 200
                }
                try scenario.require(forwarded, "the forward did not reach the target within 20 s")
                try await Self.checkPlays(net, scenario, "rtmp://\(targetAddress):1935/relayed/cam", label: "target")

                // Drain the target, sending its publishers to the backup.
                let drained = try await net.run(
                    in: "clients", "curl",
                    ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-H", "Authorization: Bearer \(token)", "-H", "Content-Type: application/json",
                     "-d", #"{"reconnectTo": "rtmp://\#(backupAddress):1935"}"#, "http://\(targetAddress):8090/api/v1/node/drain"],
                    name: "curl-drain", timeout: .seconds(10)
                )
                scenario.check(drained.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "202", "POST /api/v1/node/drain answered \(drained.stdout)")
                let moved = await eventually(timeout: .seconds(10), interval: .milliseconds(250)) {
                    (try? await net.status(from: "clients", "http://\(backupAddress):8080/relayed/cam.flv")) == 200
                }
                scenario.check(moved, "the forward did not move to the backup within 10 s of the drain")
                let exit = await target.waitForExit(timeout: .seconds(10))
                scenario.check(exit == .exited(0), "the drained target: \(exit.map(\.description) ?? "still running 10 s after the drain")")
                if moved {
                    try await Self.checkPlays(net, scenario, "rtmp://\(backupAddress):1935/relayed/cam", label: "backup")
                }
                let metrics = try await net.run(in: "clients", "curl", ["-s", "http://\(try net.address("origin")):8090/metrics"], name: "curl-metrics", timeout: .seconds(10))
                let moves = metrics.stdout.split(separator: "\n").first { $0.hasPrefix("estuary_forward_moves_total") }
                scenario.check(moves?.hasSuffix(" 1") == true, "the origin's forward moves: \(moves ?? "none")")
            }
        }

        /// ffprobe from the clients' namespace (`Scenario.checkLivePlayback`).
        static func checkPlays(_ net: NetworkTopology, _ scenario: Scenario, _ url: String, label: String) async throws {
            let probe = try await net.run(
                in: "clients", "ffprobe",
                ["-v", "error", "-show_entries", "stream=index,codec_type,codec_name:packet=stream_index,dts,flags", "-of", "json", "-read_intervals", "%+3", url],
                name: "probe-\(label)", timeout: .seconds(30)
            )
            scenario.check(probe.succeeded, "ffprobe of \(url): \(probe)")
            guard probe.succeeded else { return }
            scenario.checkLivePlayback(try ProbeReport.decode(probe.stdout), label, minVideoPackets: 60)
        }
    }
}
