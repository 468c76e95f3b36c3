import Foundation
import TestSupport
import Testing

extension IntegrationTests {
    /// Issue 25, item 4: a YAML configuration file reloaded while a viewer watches.
    @Suite("Configuration reload")
    struct ConfigurationReloadTests {
        /// The file's YAML with `extra` lines at the end.
        static func yaml(_ extra: String = "") -> String {
            """
            # Written by the test; the node reloads it when it changes.
            adminToken: \(SessionsTests.token)
            publisherGraceSeconds: 1
            drainGraceSeconds: 0
            maxStreams: 10
            \(extra)
            """
        }

        @Test("A YAML file changed under a running node: pulls, forwards, tokens and stream capacity apply within seconds (a pull starts and stops, a forward reaches another node, whose viewer watches it 30 s across three more reloads without a gap, and leaves it, a play needs a token, a second stream is refused), a file with a tab is refused and the old settings stay, a restart-only key is reported and left, SIGHUP reloads; a viewer watches the whole 40 s without a gap over 500 ms")
        func reloadUnderAViewer() async throws {
            try await Scenario.run("config-reload") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let file = scenario.file("estuary.yaml")
                func write(_ text: String) throws {
                    try Data(text.utf8).write(to: file, options: .atomic)
                }
                try write(Self.yaml())
                let node = try await scenario.startNode(label: "node", arguments: ["--config", file.path])
                let target = try await scenario.startNode(label: "target")
                let publisher = try scenario.publish(media, to: node.rtmpURL("live", "cam"), name: "publisher", loop: true)
                func publishing(_ path: String) async -> Bool {
                    ((try? await SessionsTests.sessions(node, "?kind=publish")) ?? []).contains { $0["path"] as? String == path }
                }
                let live = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) { await publishing("live/cam") }
                try scenario.require(live, "ffmpeg is not publishing: \(publisher.stderrText.suffix(300))")
                let viewer = try await scenario.openViewer(node, "live", "cam")
                try scenario.require(await viewer.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(15)), "the viewer got no media")
                // The viewer is watched through every reload below.
                let start = viewer.receivedBytes
                let watch = Task { try await longestWait(for: .seconds(40), every: .milliseconds(50), from: start) { viewer.receivedBytes } }

                // 1. A pull and a forward are added: both start.
                let source = "rtmp://127.0.0.1:\(node.rtmpPort)/live/cam"
                // The forward stays through the reloads of steps 2 to 5, which must not restart it.
                let forward = "forwards:\n  live: [\"rtmp://127.0.0.1:\(target.rtmpPort)/mirror\"]"
                try write(Self.yaml("""
                pulls:
                  live: {copy: "\(source)"}
                \(forward)
                """))
                let pulled = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) { await publishing("live/copy") }
                scenario.check(pulled, "the pull added by a reload did not publish live/copy")
                let forwarded = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) { node.log.contains("forwards reconfigured") }
                scenario.check(forwarded, "the reload did not reconfigure forwards")
                if let report = try await scenario.probeLive(target.rtmpURL("mirror", "cam"), name: "probe-mirror", seconds: 3) {
                    scenario.checkLivePlayback(report, "the forward added by a reload (at the target)", minVideoPackets: 40)
                }
                scenario.check(node.log.contains("configuration reloaded"), "the reload is not logged")
                // A viewer at the target stays on the forwarded stream 30 s, across the next reloads.
                let mirror = try await scenario.openViewer(target, "mirror", "cam")
                try scenario.require(await mirror.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(10)), "the target's viewer got no media")
                let mirrorStart = mirror.receivedBytes
                let mirrorWatch = Task { try await longestWait(for: .seconds(30), every: .milliseconds(50), from: mirrorStart) { mirror.receivedBytes } }

                // 2. Plays of `live` need a token; the pull is removed and stops.
                try write(Self.yaml("""
                tokens:
                  live: {actions: [play], hmacSecret: "reload-hmac-secret-0123"}
                \(forward)
                """))
                let refused = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) {
                    (try? await HTTPClient.get(port: node.httpPort, path: "/live/cam.flv", timeout: .seconds(2)))?.status == 403
                }
                scenario.check(refused, "after tokens were added, a play without a token was not refused")
                let pullGone = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) { await !publishing("live/copy") }
                scenario.check(pullGone, "the pull removed by a reload still publishes")

                // 3. One stream at most: a second publish is refused. Each try is a stream of
                // its own: a try taken before the reload applies is a live stream, and the
                // same name again would be refused as taken (BadName), not by the cap.
                try write(Self.yaml(forward).replacingOccurrences(of: "maxStreams: 10", with: "maxStreams: 1"))
                var second = "?"
                var attempt = 0
                let capped = await eventually(timeout: .seconds(10), interval: .milliseconds(300)) {
                    attempt += 1
                    second = (try? await RTMPRawClient.publishing(scenario, port: node.rtmpPort, app: "live", name: "second\(attempt)"))?.1 ?? "?"
                    return second != "NetStream.Publish.Start" && second != "NetStream.Publish.BadName" && second != "?"
                }
                scenario.check(capped, "with maxStreams 1 a second publish got \(second)")

                // 4. A file with a tab is refused as a whole: logged, counted, the cap stays.
                try write(Self.yaml(forward).replacingOccurrences(of: "maxStreams: 10", with: "maxStreams: 10\n\tmaxTranscodes: 2"))
                let failed = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) {
                    ((try? await node.metrics().sum("estuary_config_reloads_total", labels: ["result": "failed"])) ?? 0) >= 1
                }
                scenario.check(failed && node.log.contains("configuration not reloaded"), "a file with a tab was not refused and logged")
                let (_, stillCapped) = try await RTMPRawClient.publishing(scenario, port: node.rtmpPort, app: "live", name: "third")
                scenario.check(stillCapped != "NetStream.Publish.Start", "after a refused file the cap was lost: \(stillCapped)")

                // 5. A key only a restart changes is reported, and a flag still wins over the file.
                try write(Self.yaml("hlsSegmentSeconds: 4\nrtmpPort: 1\n" + forward).replacingOccurrences(of: "maxStreams: 10", with: "maxStreams: 1"))
                let reported = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) { node.log.contains("hlsSegmentSeconds changed in the file") }
                scenario.check(reported, "a restart-only change is not reported")
                scenario.check(!node.log.contains("rtmpPort changed"), "rtmpPort, set by a flag, was reported as changed by the file")

                // The forward ran unchanged through those reloads: the target's viewer never waited.
                let mirrorGap = try await mirrorWatch.value
                scenario.check(mirrorGap < .milliseconds(500) && !mirror.isClosed, "the target's viewer saw nothing for \(mirrorGap) (closed: \(mirror.isClosed)) while the forward was kept across reloads")
                let mirrored = try mirror.flv()
                scenario.check(mirrored.error == nil && mirrored.timestampRegressions().isEmpty && mirrored.videoFrames.count >= 750,
                               "the target's FLV: \(mirrored.error ?? "") \(mirrored.timestampRegressions().count) regressions, \(mirrored.videoFrames.count) video frames")

                // 6. SIGHUP reloads a changed file: the cap is lifted and the forward is removed.
                try write(Self.yaml("hlsSegmentSeconds: 4"))
                kill(node.process.pid, SIGHUP)
                var lifted = "?"
                let open = await eventually(timeout: .seconds(10), interval: .milliseconds(300)) {
                    lifted = (try? await RTMPRawClient.publishing(scenario, port: node.rtmpPort, app: "live", name: "fourth"))?.1 ?? "?"
                    return lifted == "NetStream.Publish.Start"
                }
                scenario.check(open, "after SIGHUP with maxStreams 10 a second publish got \(lifted)")
                scenario.check(node.process.isRunning, "SIGHUP stopped the node")
                let forwardGone = await eventually(timeout: .seconds(15), interval: .milliseconds(250)) {
                    ((try? await HTTPClient.get(port: target.httpPort, path: "/mirror/cam.flv", timeout: .seconds(1)))?.status ?? 0) == 404
                }
                scenario.check(forwardGone, "the forward removed by a reload still pushes to the target")

                // The viewer admitted before every change stayed, without a gap.
                let gap = try await watch.value
                scenario.check(gap < .milliseconds(500), "the viewer saw nothing for \(gap) during the reloads")
                scenario.check(!viewer.isClosed, "the viewer was dropped by a reload")
                let flv = try viewer.flv()
                scenario.check(flv.error == nil && flv.timestampRegressions().isEmpty && flv.videoFrames.count >= 1000,
                               "the viewer's FLV: \(flv.error ?? "") \(flv.timestampRegressions().count) regressions, \(flv.videoFrames.count) video frames")
            }
        }
    }
}
