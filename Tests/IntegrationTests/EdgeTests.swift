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
    /// `--role edge --upstream …`: streams pulled over HTTP-FLV from upstream nodes while they
    /// are watched, one pull per stream whatever the number of viewers, and failover between
    /// upstreams that keeps the viewers connected on one monotonic timeline.
    @Suite("Playback-pull edge")
    struct EdgeTests {
        /// The edge's client sockets connected to `port` on 127.0.0.1, as the kernel lists
        /// them (`ss`, by process): its upstream connections to the node listening there.
        static func connections(of edge: NodeProcess, to port: Int, scenario: Scenario) async throws -> Int {
            let run = try await scenario.run("ss", ["-Htnp", "state", "established", "( dport = :\(port) )"], name: "ss-\(port)", timeout: .seconds(5))
            try scenario.require(run.succeeded, "ss failed: \(run)")
            return run.stdout.split(separator: "\n").filter { $0.contains("pid=\(edge.process.pid),") }.count
        }

        @Test("100 viewers of an edge share one upstream pull; when the origin dies the edge fails over within 3 s, viewers stay, timestamps stay monotonic; an unwatched pull stops")
        func pullShareAndFailover() async throws {
            try await Scenario.run("edge-failover") { scenario in
                let media = try await MediaLibrary.shared.file(.shortGOPAudioVideo)
                let originA = try await scenario.startNode(label: "origin-a")
                let originB = try await scenario.startNode(label: "origin-b")
                // One encoder feeding both origins (ffmpeg's tee muxer): the same frames on
                // the same timeline, as two relays of a cluster carry a stream.
                let publisher = try scenario.launch(
                    "ffmpeg",
                    ["-nostdin", "-hide_banner", "-loglevel", "warning", "-stream_loop", "-1", "-re", "-i", media.url.path,
                     "-c", "copy", "-map", "0", "-f", "tee",
                     "[f=flv:onfail=ignore]\(originA.rtmpURL("live", "cam"))|[f=flv:onfail=ignore]\(originB.rtmpURL("live", "cam"))"],
                    name: "publisher-tee"
                )
                scenario.note("publisher (pid \(publisher.pid)) publishing to both origins")
                try await scenario.waitUntilLive(originA, "live", "cam")
                try await scenario.waitUntilLive(originB, "live", "cam")

                let edge = try await scenario.startNode(
                    label: "edge",
                    arguments: ["--role", "edge", "--upstream", "\(originA.httpBase),\(originB.httpBase)"]
                )
                // A stream no upstream has: 404 at once, over HTTP-FLV.
                let missing = try await HTTPClient.get(port: edge.httpPort, path: "/live/nothing.flv", timeout: .seconds(5))
                scenario.check(missing.status == 404, "an unknown stream on the edge answered \(missing.status), expected 404")

                // 100 HTTP-FLV viewers and an RTMP viewer (ffprobe), all of the same stream.
                var viewers: [HTTPFLVViewer] = []
                for _ in 0..<100 {
                    viewers.append(try await scenario.openViewer(edge, "live", "cam"))
                }
                let rtmpViewer = try scenario.launch(
                    "ffprobe",
                    ["-v", "error", "-show_entries", "stream=index,codec_type:packet=stream_index,dts,pts,flags", "-of", "json", "-read_intervals", "%+12", edge.rtmpURL("live", "cam")],
                    name: "probe-rtmp-edge"
                )
                try await Task.sleep(for: .seconds(3))
                let watched = viewers[0]
                let beforeKill = try watched.flv()
                scenario.check(beforeKill.videoFrames.count >= 30, "the edge's viewer got \(beforeKill.videoFrames.count) video frames in 3 s")
                let toA = try await Self.connections(of: edge, to: originA.httpPort, scenario: scenario)
                let toB = try await Self.connections(of: edge, to: originB.httpPort, scenario: scenario)
                scenario.check(toA == 1 && toB == 0, "101 viewers on the edge: \(toA) connections to origin A and \(toB) to B, expected 1 and 0")
                let playsOnA = try await originA.metrics().sum("estuary_sessions_active", labels: ["kind": "play", "protocol": "http-flv"])
                scenario.check(playsOnA == 1, "origin A counts \(playsOnA) HTTP-FLV plays, expected the edge's one")
                scenario.note("\(viewers.count) HTTP-FLV viewers + 1 RTMP viewer on the edge: \(toA) upstream connection(s)")

                // Kill the origin the edge pulls from, and watch one viewer's frame count.
                await originA.kill()
                let longestStall = try await longestWait(for: .seconds(6), every: .milliseconds(50), from: beforeKill.videoFrames.count) {
                    try watched.flv().videoFrames.count
                }
                scenario.note("longest wait for a video frame after origin A died: \(longestStall)")
                scenario.check(longestStall < .seconds(3), "the viewer saw no video for \(longestStall) after the origin died (target < 3 s)")
                let toBAfter = try await Self.connections(of: edge, to: originB.httpPort, scenario: scenario)
                scenario.check(toBAfter == 1, "after the failover the edge has \(toBAfter) connections to origin B, expected 1")

                // Every viewer stayed connected, on one monotonic timeline, with no repeated
                // or skipped seconds at the failover.
                let closed = viewers.filter(\.isClosed).count
                scenario.check(closed == 0, "\(closed) of \(viewers.count) HTTP-FLV viewers were disconnected by the failover")
                let flv = try watched.flv()
                scenario.check(flv.error == nil, "the edge's HTTP-FLV is not valid FLV: \(flv.error ?? "")")
                scenario.checkContinuousTimeline(flv, "the edge's HTTP-FLV viewer")

                // The RTMP viewer across the failover: decodable packets, DTS never backwards.
                let probe = await rtmpViewer.finish(timeout: .seconds(15))
                scenario.check(probe.succeeded, "ffprobe over RTMP from the edge: \(probe)")
                if probe.succeeded {
                    let report = try ProbeReport.decode(probe.stdout)
                    let videoStream = report.video
                    scenario.check(report.packets(of: videoStream).count >= 150, "ffprobe got \(report.packets(of: videoStream).count) video packets over 12 s")
                    scenario.check(report.dtsRegressions(of: videoStream).isEmpty, "RTMP DTS regressions at the edge: \(report.dtsRegressions(of: videoStream).prefix(5))")
                }

                // Nobody watches: the edge lets go of the upstream after its idle grace (5 s).
                for viewer in viewers {
                    await viewer.connection.close()
                }
                let released = await eventually(timeout: .seconds(12), interval: .milliseconds(250)) {
                    (try? await Self.connections(of: edge, to: originB.httpPort, scenario: scenario)) == 0
                }
                scenario.check(released, "the edge still pulls from origin B 12 s after its last viewer left")
                publisher.send(signal: SIGTERM)
            }
        }

        @Test("An edge pulls over RTMP from an rtmp:// upstream: HTTP-FLV and RTMP viewers get the stream's codecs and every frame in order; a stream the origin lacks is a 404")
        func rtmpUpstream() async throws {
            try await Scenario.run("edge-rtmp-upstream") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let origin = try await scenario.startNode(label: "origin")
                let publisher = try scenario.publish(media, to: origin.rtmpURL("live", "cam"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(origin, "live", "cam")
                let edge = try await scenario.startNode(
                    label: "edge",
                    arguments: ["--role", "edge", "--upstream", "rtmp://127.0.0.1:\(origin.rtmpPort)"]
                )
                let missing = try await HTTPClient.get(port: edge.httpPort, path: "/live/nothing.flv", timeout: .seconds(5))
                scenario.check(missing.status == 404, "a stream the RTMP origin lacks answered \(missing.status) on the edge, expected 404")

                // ffprobe reads 6 s over HTTP-FLV and over RTMP from the edge.
                async let flv = scenario.run(
                    "ffprobe",
                    ["-v", "error", "-show_entries", "stream=index,codec_type,codec_name,profile,width,height,sample_rate,channels:packet=stream_index,dts,pts,flags",
                     "-of", "json", "-read_intervals", "%+6", edge.flvURL("live", "cam")],
                    name: "probe-flv-edge", timeout: .seconds(30)
                )
                async let rtmp = scenario.run(
                    "ffprobe",
                    ["-v", "error", "-show_entries", "stream=index,codec_type,codec_name,profile,width,height,sample_rate,channels:packet=stream_index,dts,pts,flags",
                     "-of", "json", "-read_intervals", "%+6", edge.rtmpURL("live", "cam")],
                    name: "probe-rtmp-edge", timeout: .seconds(30)
                )
                // While both play: one pull, over RTMP (the origin counts one RTMP play).
                try await Task.sleep(for: .seconds(3))
                let plays = try await origin.metrics().sum("estuary_sessions_active", labels: ["kind": "play", "protocol": "rtmp"])
                scenario.check(plays == 1, "the origin counts \(plays) RTMP plays for the edge's two viewers, expected 1")
                for (label, run) in [("HTTP-FLV", try await flv), ("RTMP", try await rtmp)] {
                    scenario.check(run.succeeded, "ffprobe over \(label) from the edge: \(run)")
                    guard run.succeeded else { continue }
                    let report = try ProbeReport.decode(run.stdout)
                    scenario.check(report.video?.codecName == "h264" && report.video?.width == media.width && report.video?.height == media.height,
                                   "\(label): video \(String(describing: report.video))")
                    scenario.check(report.audio?.codecName == "aac" && report.audio?.sampleRate == "44100", "\(label): audio \(String(describing: report.audio))")
                    let video = report.packets(of: report.video)
                    scenario.check(video.count >= 150, "\(label): \(video.count) video packets in 6 s")
                    scenario.check(report.dtsRegressions(of: report.video).isEmpty && report.dtsRegressions(of: report.audio).isEmpty,
                                   "\(label): DTS regressions \(report.dtsRegressions(of: report.video).prefix(3)) \(report.dtsRegressions(of: report.audio).prefix(3))")
                    // 30 fps: consecutive video DTS one frame apart, no gaps or repeats.
                    let steps = zip(video, video.dropFirst()).compactMap { pair in pair.0.dts.flatMap { a in pair.1.dts.map { $0 - a } } }
                    scenario.check(steps.allSatisfy { (20...50).contains($0) }, "\(label): video DTS steps outside 20–50 ms: \(steps.filter { !(20...50).contains($0) }.prefix(5))")
                    scenario.note("\(label) from the edge (RTMP upstream): \(video.count) video packets, first keyframe \(video.first?.isKeyframe == true)")
                }
                publisher.send(signal: SIGTERM)
            }
        }
    }
}

extension IntegrationTests.EdgeTests {
    /// Issue 26: an edge outside a cluster has no coordinator to name a multitrack stream's
    /// tracks; the origin lists them in the stream's metadata (Enhanced RTMP v2's
    /// `videoTrackIdInfoMap` and `audioTrackIdInfoMap`), and the edge opens them too.
    @Test("An edge outside a cluster learns a multitrack stream's tracks from the origin's metadata: the first master a player asks for lists the three video tracks at their resolutions and the second audio track as alternate audio, over an http:// and an rtmp:// upstream; viewers stay 30 s on track 1 over LL-HLS and on track 2 over HTTP-FLV, each at its own size with audio")
    func multitrackTracksOnAnEdge() async throws {
        try await Scenario.run("edge-multitrack") { scenario in
            let media = try await MediaLibrary.shared.file(.multitrackAudioVideo)
            let origin = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1), label: "origin")
            let python = try TestEnvironment.python3()
            let publisher = try scenario.launch(
                executable: python, [try IntegrationTests.EnhancedRTMPTests.peer("pyav_publish.py"), media.url.path, origin.rtmpURL("live", "mt")], name: "pyav-multitrack-publisher"
            )
            try await scenario.waitUntilLive(origin, "live", "mt/track1", timeout: .seconds(20))
            try await scenario.waitUntilLive(origin, "live", "mt/track2", timeout: .seconds(10))
            try await scenario.waitUntilLive(origin, "live", "mt/audio1", timeout: .seconds(10))
            // Not a cluster: the edges have no coordinator.
            let httpEdge = try await scenario.startNode(label: "edge-http", arguments: ["--role", "edge", "--upstream", origin.httpBase])
            let rtmpEdge = try await scenario.startNode(label: "edge-rtmp", arguments: ["--role", "edge", "--upstream", "rtmp://127.0.0.1:\(origin.rtmpPort)"])

            // A player reads the master once: the first one must list every track.
            for (edge, label) in [(httpEdge, "the http:// edge"), (rtmpEdge, "the rtmp:// edge")] {
                let first = try await scenario.hlsGet(edge, "/live/mt/llhls.m3u8")
                let body = first.bodyText
                scenario.check(
                    first.status == 200 && ["RESOLUTION=640x360", "RESOLUTION=426x240", "RESOLUTION=320x180", "track1/llhls.m3u8", "track2/llhls.m3u8", "audio1/llhls.m3u8"].allSatisfy(body.contains),
                    "\(label)'s first LL-HLS master (\(first.status)) does not list the three tracks and the second audio: \(body)"
                )
                await IntegrationTests.EnhancedRTMPTests.checkMastersListTracks(scenario, edge, "live/mt", label)
                await IntegrationTests.EnhancedRTMPTests.checkMastersListAlternateAudio(scenario, edge, "live/mt", label)
            }

            let watcher = try IntegrationTests.EnhancedRTMPTests.peer("pyav_watch.py")
            let viewers = [
                ("the edge's track 1 (LL-HLS)", 426, 240, IntegrationTests.EnhancedRTMPTests.hlsMaxWait,
                 try scenario.launch(executable: python, [watcher, "\(httpEdge.httpBase)/live/mt/track1/llhls.m3u8", "30"], name: "edge-track1-hls")),
                ("the edge's track 2 (HTTP-FLV)", 320, 180, 0.5, try scenario.launch(executable: python, [watcher, httpEdge.flvURL("live", "mt/track2"), "30"], name: "edge-track2")),
            ]
            for (label, width, height, maxWait, viewer) in viewers {
                try await IntegrationTests.EnhancedRTMPTests.checkStayed(scenario, viewer, label, width: width, height: height, maxWait: maxWait)
            }
            scenario.check(publisher.isRunning, "the multitrack publisher was disconnected")
        }
    }
}
