import Foundation
import TestSupport
import Testing

extension IntegrationTests {
    /// Sessions of every protocol go through one admission path, whose observers count them
    /// (`estuary_sessions_started_total`, `estuary_sessions_active`, by kind and protocol).
    @Suite("Sessions")
    struct SessionMetricsTests {
        @Test("An RTMP publisher, an RTMP viewer and an HTTP-FLV viewer are counted as sessions while they last, by protocol")
        func sessionsAreCountedByKindAndProtocol() async throws {
            try await Scenario.run("session-metrics") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1))
                let publisher = try scenario.publish(media, to: node.rtmpURL("live", "sessions"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(node, "live", "sessions")
                let flv = try await scenario.openViewer(node, "live", "sessions")
                try scenario.require(await flv.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(10)), "the HTTP-FLV viewer got no media")
                let rtmp = try scenario.startProbe(node.rtmpURL("live", "sessions"), name: "rtmp-viewer")

                func active(_ kind: String, _ transport: String) async -> Double {
                    (try? await node.metrics().sum("estuary_sessions_active", labels: ["kind": kind, "protocol": transport])) ?? -1
                }
                var seen: [Double] = []
                let counted = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) {
                    seen = [await active("publish", "rtmp"), await active("play", "rtmp"), await active("play", "http-flv")]
                    return seen == [1, 1, 1]
                }
                scenario.check(counted, "active sessions (publish rtmp, play rtmp, play http-flv): \(seen), expected [1, 1, 1]")

                await rtmp.killNow()
                await flv.connection.close()
                _ = await publisher.stop()
                let ended = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) {
                    seen = [await active("publish", "rtmp"), await active("play", "rtmp"), await active("play", "http-flv")]
                    return seen == [0, 0, 0]
                }
                scenario.check(ended, "active sessions after everyone left: \(seen), expected [0, 0, 0]")
                let started = try await node.metrics()
                scenario.check(started.sum("estuary_sessions_started_total", labels: ["kind": "play", "protocol": "http-flv"]) >= 2,
                               "HTTP-FLV plays started (waitUntilLive's probe and the viewer) are not counted")
            }
        }

        @Test("Per-stream metrics: a stream's ingest bitrate and video frame rate, its viewers by protocol and the bytes they were sent, every 5 s; the series go when the stream ends")
        func perStreamMetrics() async throws {
            try await Scenario.run("stream-metrics") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let node = try await scenario.startNode(label: "node")
                let publisher = try scenario.publish(media, to: node.rtmpURL("live", "cam"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(node, "live", "cam")
                let viewer = try await scenario.openViewer(node, "live", "cam")
                try scenario.require(await viewer.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(10)), "the viewer got no media")
                // Two samples (5 s apart) make a rate.
                var metrics = try await node.metrics()
                let sampled = await eventually(timeout: .seconds(15), interval: .milliseconds(500)) {
                    metrics = (try? await node.metrics()) ?? metrics
                    return metrics.sum("estuary_stream_video_frames_per_second", labels: ["stream": "live/cam"]) > 0
                        && metrics.sum("estuary_stream_viewers", labels: ["stream": "live/cam", "protocol": "http-flv"]) >= 1
                }
                scenario.check(sampled, "no per-stream samples: \(metrics.describe("estuary_stream"))")
                let fps = metrics.sum("estuary_stream_video_frames_per_second", labels: ["stream": "live/cam"])
                let bits = metrics.sum("estuary_stream_ingest_bits_per_second", labels: ["stream": "live/cam"])
                scenario.check((21...39).contains(fps), "video frames per second \(fps), the source has 30")
                scenario.check(bits > 100_000 && bits < 20_000_000, "ingest bits per second \(bits)")
                scenario.check(metrics.sum("estuary_stream_viewers", labels: ["stream": "live/cam", "protocol": "http-flv"]) == 1, "\(metrics.describe("estuary_stream_viewers"))")
                scenario.check(metrics.sum("estuary_stream_viewer_bytes_out", labels: ["stream": "live/cam"]) > 20_000, "\(metrics.describe("estuary_stream_viewer_bytes_out"))")

                // The stream ends (its grace is 1 s): its series go.
                await viewer.close()
                _ = await publisher.stop()
                let gone = await eventually(timeout: .seconds(15), interval: .milliseconds(500)) {
                    ((try? await node.metrics())?.text.contains("stream=\"live/cam\"")) == false
                }
                let left = (try? await node.metrics())?.describe("estuary_stream") ?? ""
                scenario.check(gone, "the ended stream's series stay: \(left)")
            }
        }

        @Test("The Grafana dashboard (docker/grafana/estuary-dashboard.json) is a dashboard whose every query names metrics a node exports with a publisher transcoded to a rung, a viewer admitted by a hook, an RTMPS handshake and a configuration reload")
        func grafanaDashboardReadsExportedMetrics() async throws {
            try await Scenario.run("grafana-dashboard") { scenario in
                guard let root = TestEnvironment.repositoryRoot else { throw IntegrationFailure("the repository is not found") }
                let data = try Data(contentsOf: root.appendingPathComponent("docker/grafana/estuary-dashboard.json"))
                let dashboard = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "the dashboard is not a JSON object")
                let panels = dashboard["panels"] as? [[String: Any]] ?? []
                let expressions = panels.flatMap { ($0["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String } }
                scenario.check(dashboard["title"] is String && panels.count >= 6 && expressions.count >= panels.count, "the dashboard: \(panels.count) panels, \(expressions.count) queries")
                let names = Set(expressions.flatMap { expression in
                    expression.matches(of: /estuary_[a-z_]+/).map { String($0.output) }
                })

                // A node with what the panels watch in use: a play hook, a ladder, an RTMPS
                // listener that a client completes a handshake with, and a configuration
                // reloaded once.
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let hooks = try await WebhookTests.HookServer.start(scenario, slowSeconds: 1)
                let pki = scenario.directory.appendingPathComponent("pki")
                try FileManager.default.createDirectory(at: pki, withIntermediateDirectories: true)
                let issued = try await TLSTests.certificate(scenario, serial: 77, into: pki)
                let rtmpsPort = try await FreePorts.allocate(1)[0]
                let config = scenario.file("dashboard.yaml")
                // One small rung, so that the transcoder's lag and drops are exported too.
                let yaml = "hooks:\n  live:\n    onPlay: {url: \"\(hooks.url("/admit/on_play"))\"}\n"
                    + "ladders:\n  live:\n    - {name: \"144p\", height: 144, videoBitRate: 200000}\n"
                try Data(yaml.utf8).write(to: config)
                let node = try await scenario.startNode(label: "node", arguments: [
                    "--config", config.path, "--rtmps-port", String(rtmpsPort), "--tls-certificate", issued.certificate.path, "--tls-key", issued.key.path,
                ])
                let publisher = try scenario.publish(media, to: node.rtmpURL("live", "cam"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(node, "live", "cam")
                let viewer = try await scenario.openViewer(node, "live", "cam")
                _ = try await TLSTests.servedSerial(scenario, port: rtmpsPort)
                try Data((yaml + "maxStreams: 50\n").utf8).write(to: config, options: .atomic)
                kill(node.process.pid, SIGHUP)
                var exported: Set<String> = []
                let all = await eventually(timeout: .seconds(15), interval: .milliseconds(500)) {
                    let text = (try? await node.metrics())?.text ?? ""
                    exported = Set(text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { line in
                        line.split(whereSeparator: { $0 == "{" || $0 == " " }).first.map(String.init)
                    })
                    return names.isSubset(of: exported)
                }
                scenario.check(all && !names.isEmpty, "the dashboard reads metrics the node does not export: \(names.subtracting(exported).sorted())")
                await viewer.close()
                _ = await publisher.stop()
            }
        }
    }
}
