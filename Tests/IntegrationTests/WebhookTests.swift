import Foundation
import TestSupport
import Testing

extension IntegrationTests {
    /// Issue 25, webhooks: the operator's backend (a real HTTP server in the test,
    /// `Tests/Peers/hook_server.py`) admits, refuses, answers slowly, is down or fails once;
    /// each outcome is seen from the client's side, and the ends are told.
    @Suite("Webhooks")
    struct WebhookTests {
        /// The hook server: its port and what it was sent.
        struct HookServer {
            let process: ChildProcess
            let port: Int
            let log: URL

            static func start(_ scenario: Scenario, slowSeconds: Double) async throws -> HookServer {
                guard let peers = TestEnvironment.repositoryRoot?.appendingPathComponent("Tests/Peers") else {
                    throw IntegrationFailure("Tests/Peers not found")
                }
                let ready = scenario.directory.appendingPathComponent("hooks.ready")
                let log = scenario.directory.appendingPathComponent("hooks.jsonl")
                let process = try scenario.launch(
                    executable: try TestEnvironment.python3(),
                    [peers.appendingPathComponent("hook_server.py").path, "--log", log.path, "--slow-seconds", String(slowSeconds), "--ready-file", ready.path],
                    name: "hook-server"
                )
                let up = await eventually(timeout: .seconds(10), interval: .milliseconds(50)) {
                    !process.isRunning || FileManager.default.fileExists(atPath: ready.path)
                }
                try scenario.require(up && process.isRunning, "the hook server did not start: \(process.stderrText)")
                let line = (try? String(contentsOf: ready, encoding: .utf8)) ?? ""
                guard let port = line.split(separator: ":").last.flatMap({ Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }) else {
                    throw IntegrationFailure("the hook server's ready line: \(line)")
                }
                return HookServer(process: process, port: port, log: log)
            }

            func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

            /// Every request so far: (path, body).
            func requests() -> [(path: String, body: [String: Any])] {
                let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                return text.split(separator: "\n").compactMap { line in
                    guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                          let path = object["path"] as? String else { return nil }
                    return (path, object["body"] as? [String: Any] ?? [:])
                }
            }

            func bodies(_ path: String) -> [[String: Any]] {
                requests().filter { $0.path == path }.map(\.body)
            }
        }

        @Test("on_publish and on_play decide: an ffmpeg publisher and an HTTP-FLV viewer the backend admits play (the hook gets the session id, path, protocol, address, full query and node); refusals reach ffmpeg, RTMP and curl; a slow hook refuses within its timeout without holding other sessions; a down backend refuses or, failing open, admits; a 5xx is retried; on_unpublish and on_stop carry duration, bytes and reason")
        func hooksDecideAndAreTold() async throws {
            try await Scenario.run("hooks") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let hooks = try await HookServer.start(scenario, slowSeconds: 4)
                let nothingListens = try await FreePorts.allocate(1)[0]
                typealias Hook = NodeConfig.Hook
                var config = NodeConfig()
                config.hooks = [
                    "live": .init(
                        onPublish: Hook(url: hooks.url("/admit/publish")), onUnpublish: Hook(url: hooks.url("/admit/unpublish")),
                        onPlay: Hook(url: hooks.url("/admit/play")), onStop: Hook(url: hooks.url("/admit/stop"))
                    ),
                    "closed": .init(onPublish: Hook(url: hooks.url("/refuse/publish")), onPlay: Hook(url: hooks.url("/refuse/play"))),
                    "slow": .init(onPublish: Hook(url: hooks.url("/slow/publish"), timeoutSeconds: 1, retries: 0)),
                    "down": .init(onPublish: Hook(url: "http://127.0.0.1:\(nothingListens)/publish", timeoutSeconds: 1, retries: 1)),
                    "downopen": .init(onPublish: Hook(url: "http://127.0.0.1:\(nothingListens)/publish", timeoutSeconds: 1, retries: 1), failOpen: true),
                    "flaky": .init(onPublish: Hook(url: hooks.url("/flaky/publish"), retries: 1)),
                ]
                let node = try await scenario.startNode(config, label: "node", arguments: ["--admin-token", SessionsTests.token])

                // Admitted: ffmpeg publishes with a key, curl-like HTTP-FLV viewer plays.
                let publisher = try scenario.publish(media, to: node.rtmpURL("live", "cam") + "?key=s3cret", name: "publisher", loop: true)
                try await scenario.waitUntilLive(node, "live", "cam")
                let published = hooks.bodies("/admit/publish")
                try scenario.require(published.count == 1, "on_publish was called \(published.count) times")
                let publish = published[0]
                let listed = try await SessionsTests.sessions(node, "?kind=publish")
                scenario.check(publish["action"] as? String == "on_publish" && publish["stream"] as? String == "live/cam" && publish["app"] as? String == "live"
                               && publish["protocol"] as? String == "rtmp" && publish["query"] as? String == "key=s3cret"
                               && (publish["remoteAddress"] as? String)?.hasPrefix("127.0.0.1:") == true && (publish["nodeId"] as? String)?.isEmpty == false,
                               "the on_publish body: \(publish)")
                scenario.check(listed.first?["id"] as? String == publish["sessionId"] as? String, "the hook's session id \(publish["sessionId"] ?? "none") is not the listed publisher's \(listed)")

                let viewer = try await scenario.openViewer(node, "live", "cam")
                try scenario.require(await viewer.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(10)), "the admitted viewer got no media")
                // The last on_play is the viewer's (waiting for the stream to be live played it too).
                let play = hooks.bodies("/admit/play").last ?? [:]
                scenario.check(play["action"] as? String == "on_play" && play["protocol"] as? String == "http-flv" && play["stream"] as? String == "live/cam"
                               && (play["sessionId"] as? String)?.hasPrefix("v-") == true, "the on_play body: \(play)")

                // Refused: each client is told.
                let (_, closedCode) = try await RTMPRawClient.publishing(scenario, port: node.rtmpPort, app: "closed", name: "cam")
                scenario.check(closedCode == "NetStream.Publish.Denied", "a publish the hook refuses got \(closedCode)")
                let refusedFFmpeg = try scenario.publish(media, to: node.rtmpURL("closed", "other"), name: "refused-publisher")
                let refusedEnd = await refusedFFmpeg.waitForExit(timeout: .seconds(10))
                scenario.check(refusedEnd != nil && refusedEnd != .exited(0), "ffmpeg refused by the hook: \(refusedEnd.map { "\($0)" } ?? "still running")")
                scenario.check(refusedFFmpeg.stderrText.contains("refused by the on_publish hook"), "ffmpeg was not told why: \(refusedFFmpeg.stderrText.suffix(300))")
                let refusedPlay = try await HTTPClient.get(port: node.httpPort, path: "/closed/cam.flv")
                scenario.check(refusedPlay.status == 403, "an HTTP-FLV play the hook refuses answered \(refusedPlay.status)")

                // Slow: refused after the hook's 1 s timeout; meanwhile the viewer is served.
                let before = viewer.receivedBytes
                let started = ContinuousClock.now
                let (_, slowCode) = try await RTMPRawClient.publishing(scenario, port: node.rtmpPort, app: "slow", name: "cam")
                let waited = ContinuousClock.now - started
                scenario.check(slowCode == "NetStream.Publish.Denied" && waited >= .milliseconds(900) && waited < .seconds(3),
                               "a publish whose hook is slow got \(slowCode) after \(waited)")
                scenario.check(viewer.receivedBytes > before + 10_000, "the viewer got \(viewer.receivedBytes - before) bytes while a hook was slow")

                // Down: fail closed refuses, fail open admits; both after the retry.
                let (_, downCode) = try await RTMPRawClient.publishing(scenario, port: node.rtmpPort, app: "down", name: "cam")
                scenario.check(downCode == "NetStream.Publish.Denied", "a publish whose hook is down (fail closed) got \(downCode)")
                let downPlay = try await HTTPClient.get(port: node.httpPort, path: "/down/cam.flv")
                scenario.check(downPlay.status == 404, "a play in an application without on_play answered \(downPlay.status)")
                let (openClient, openCode) = try await RTMPRawClient.publishing(scenario, port: node.rtmpPort, app: "downopen", name: "cam")
                scenario.check(openCode == "NetStream.Publish.Start", "a publish whose hook is down (fail open) got \(openCode)")
                await openClient.close()
                scenario.check(node.log.contains("connection refused"), "the log does not say the hook's connection was refused")

                // A 5xx is tried again: the second answer admits.
                let (flakyClient, flakyCode) = try await RTMPRawClient.publishing(scenario, port: node.rtmpPort, app: "flaky", name: "cam")
                scenario.check(flakyCode == "NetStream.Publish.Start" && hooks.bodies("/flaky/publish").count == 2,
                               "a hook that failed once: \(flakyCode) after \(hooks.bodies("/flaky/publish").count) requests")
                await flakyClient.close()

                // The ends are told, with duration, bytes and reason.
                await viewer.close()
                _ = await publisher.stop()
                let viewerID = play["sessionId"] as? String
                let told = await eventually(timeout: .seconds(10), interval: .milliseconds(100)) {
                    hooks.bodies("/admit/stop").contains { $0["sessionId"] as? String == viewerID } && !hooks.bodies("/admit/unpublish").isEmpty
                }
                try scenario.require(told, "the ends were not told: \(hooks.requests().map(\.path))")
                let stop = hooks.bodies("/admit/stop").first { $0["sessionId"] as? String == viewerID } ?? [:]
                scenario.check(stop["sessionId"] as? String == play["sessionId"] as? String && (stop["bytesOut"] as? Int ?? 0) > 20_000
                               && (stop["durationSeconds"] as? Double ?? 0) > 1 && stop["reason"] as? String == "left", "the on_stop body: \(stop)")
                let unpublish = hooks.bodies("/admit/unpublish")[0]
                scenario.check(unpublish["sessionId"] as? String == publish["sessionId"] as? String && (unpublish["bytesIn"] as? Int ?? 0) > 100_000
                               && (unpublish["durationSeconds"] as? Double ?? 0) > 3 && unpublish["reason"] != nil, "the on_unpublish body: \(unpublish)")

                let metrics = try await node.metrics()
                scenario.check(metrics.sum("estuary_hook_requests_total", labels: ["action": "on_publish", "result": "refused"]) >= 2
                               && metrics.sum("estuary_hook_requests_total", labels: ["action": "on_publish", "result": "failed"]) >= 5,
                               "estuary_hook_requests_total: refused \(metrics.sum("estuary_hook_requests_total", labels: ["action": "on_publish", "result": "refused"])), failed \(metrics.sum("estuary_hook_requests_total", labels: ["action": "on_publish", "result": "failed"]))")
                scenario.check(metrics.sum("estuary_publishes_refused_total", labels: ["reason": "hook_refused"]) >= 2, "refusals by the hook are not counted by reason")
            }
        }

        @Test("A hook's 2xx body renames a publish (ffmpeg's stream plays under the new name, listed there), and redirects players (HTTP-FLV and HLS: 302 with the request's path and query) and Enhanced RTMP v2 publishers (a reconnect request to the other server); a plain RTMP publisher is refused")
        func hooksRenameAndRedirect() async throws {
            try await Scenario.run("hooks-redirect") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let hooks = try await HookServer.start(scenario, slowSeconds: 1)
                typealias Hook = NodeConfig.Hook
                var config = NodeConfig()
                config.hooks = [
                    "renamed": .init(onPublish: Hook(url: hooks.url("/rename/publish?name=alias"))),
                    "moved": .init(onPublish: Hook(url: hooks.url("/redirect/publish?to=rtmp://other.example:1935"))),
                    "watch": .init(onPlay: Hook(url: hooks.url("/redirect/play?to=http://other.example:8080"))),
                ]
                let node = try await scenario.startNode(config, label: "node", arguments: ["--admin-token", SessionsTests.token])

                // Renamed: ffmpeg publishes renamed/cam, the stream is renamed/alias.
                let publisher = try scenario.publish(media, to: node.rtmpURL("renamed", "cam"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(node, "renamed", "alias")
                if let report = try await scenario.probeLive(node.flvURL("renamed", "alias"), name: "probe-alias", seconds: 3) {
                    scenario.checkLivePlayback(report, "the renamed stream", minVideoPackets: 40, width: media.width)
                }
                let listed = try await SessionsTests.sessions(node, "?kind=publish")
                scenario.check(listed.map { $0["path"] as? String } == ["renamed/alias"], "the renamed publisher is listed as \(listed.map { $0["path"] ?? "" })")
                scenario.check(node.log.contains("publish renamed"), "the rename is not logged")
                scenario.check(try await HTTPClient.get(port: node.httpPort, path: "/renamed/cam.flv").status == 404, "the name asked for is live too")

                // Redirected players: 302 to the other server, same path and query (HLS asks the
                // admission only for a stream that is live here).
                let watched = try scenario.publish(media, to: node.rtmpURL("watch", "cam"), name: "watched-publisher", loop: true)
                let watchLive = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) {
                    ((try? await SessionsTests.sessions(node, "?kind=publish")) ?? []).contains { $0["path"] as? String == "watch/cam" }
                }
                try scenario.require(watchLive, "watch/cam is not live")
                for path in ["/watch/cam.flv?token=t1", "/watch/cam/index.m3u8?token=t1"] {
                    let response = try await HTTPClient.get(port: node.httpPort, path: path)
                    scenario.check(response.status == 302 && response.header("location") == "http://other.example:8080\(path)",
                                   "GET \(path): \(response.status) Location \(response.header("location") ?? "none")")
                }

                // An Enhanced RTMP v2 publisher is asked to reconnect there; a plain one is refused.
                let enhanced = try await RTMPRawClient.connect(port: node.rtmpPort)
                scenario.track(enhanced.connection)
                try await enhanced.plainHandshake()
                _ = try await enhanced.connect(app: "moved", capsEx: 1)
                let code = try await enhanced.publish(name: "cam", streamID: try await enhanced.createStream())
                scenario.check(code == "NetConnection.Connect.ReconnectRequest", "an Enhanced RTMP v2 publisher redirected by the hook got \(code)")
                let (_, plain) = try await RTMPRawClient.publishing(scenario, port: node.rtmpPort, app: "moved", name: "cam")
                scenario.check(plain == "NetStream.Publish.Denied", "a plain RTMP publisher redirected by the hook got \(plain)")
                _ = await watched.stop()
                _ = await publisher.stop()
            }
        }

        @Test("A hook that is not an http(s) URL, an unknown hook key, or attempts that outlast the admission timeout are refused by --check-config with the key named; a valid one passes")
        func badHookConfigurations() async throws {
            try await Scenario.run("hooks-config") { scenario in
                for (json, expected) in [
                    (#"{"hooks": {"live": {"onPublish": {"url": "ftp://backend/publish"}}}}"#, "hooks.live.onPublish.url: expected an http:// or https:// URL"),
                    (#"{"hooks": {"live": {"onPublsh": {"url": "http://backend/publish"}}}}"#, "unknown key 'hooks.live.onPublsh'"),
                    (#"{"hooks": {"live": {"onPlay": {"url": "http://backend/play", "timeout": 1}}}}"#, "unknown key 'hooks.live.onPlay.timeout'"),
                    (#"{"hooks": {"live": {"onPlay": {"url": "http://backend/play", "retries": 9}}}}"#, "hooks.live.onPlay.retries must be within 0…5"),
                    (#"{"hooks": {"bad app": {"onPlay": {"url": "http://backend/play"}}}}"#, "hooks: invalid application name 'bad app'"),
                    (#"{"admissionTimeoutSeconds": 5, "hooks": {"*": {"onPlay": {"url": "http://backend/play", "timeoutSeconds": 3, "retries": 2}}}}"#, "hooks.*.onPlay: its attempts"),
                ] {
                    try await scenario.checkConfigFails(json: json, saying: expected)
                }
                try await scenario.checkConfigPasses(json: #"{"hooks": {"*": {"onPlay": {"url": "https://backend/play", "timeoutSeconds": 1, "retries": 1}, "failOpen": true}}}"#)
            }
        }
    }
}
