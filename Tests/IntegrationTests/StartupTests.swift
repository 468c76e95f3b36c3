import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension IntegrationTests {
    /// What an operator sees when a node cannot start as asked: one line and a non-zero exit,
    /// never a process that lingers, serving nothing.
    @Suite("Startup")
    struct StartupTests {
        @Test("A listener that cannot bind ends the process at once, with one line naming the listener and its flag")
        func bindFailureEndsTheProcess() async throws {
            try await Scenario.run("bind-failure") { scenario in
                let node = try await scenario.startNode()
                let binary = try TestEnvironment.nodeBinary()
                for (listener, flag, arguments) in [
                    ("HTTP", "--http-port", ["--http-port", String(node.httpPort), "--rtmp-port", "0", "--admin-port", "0"]),
                    ("RTMP", "--rtmp-port", ["--rtmp-port", String(node.rtmpPort), "--http-port", "0", "--admin-port", "0"]),
                    ("the admin plane", "--admin-port", ["--admin-port", String(node.adminPort), "--rtmp-port", "0", "--http-port", "0"]),
                ] {
                    let second = try scenario.launch(
                        executable: binary,
                        ["--bind", "127.0.0.1", "--data-dir", scenario.file("second-\(listener)").path] + arguments,
                        name: "second-\(listener)"
                    )
                    let ended = await second.waitForExit(timeout: .seconds(10))
                    scenario.check(ended != nil && ended != .exited(0), "a node whose \(listener) port is taken did not exit with an error: \(ended.map(\.description) ?? "still running after 10 s")")
                    let lines = second.stderrText.split(separator: "\n").filter { $0.contains("cannot listen") }
                    scenario.check(
                        lines.count == 1 && lines[0].contains(listener) && lines[0].contains(flag) && lines[0].contains("in use"),
                        "\(listener): expected one line naming the listener, the flag and the reason; stderr:\n\(tail(second.stderrText, lines: 8))"
                    )
                }
            }
        }

        @Test("Configuration errors name the key and the file, in one line")
        func configurationErrors() async throws {
            try await Scenario.run("config-errors") { scenario in
                for (json, expected) in [
                    (#"{"maxConections": 5}"#, "unknown key 'maxConections'"),
                    (#"{"nats": {"servers": ["nats://a:4222"], "tokn": "x"}}"#, "unknown key 'nats.tokn'"),
                    (#"{"rtmpPort": "1935"}"#, "'rtmpPort': expected a whole number, got a string"),
                ] {
                    try await scenario.checkConfigFails(json: json, saying: expected, namesFile: true)
                }
                // Values that parse but cannot be used: one line saying which and why.
                for (json, expected) in [
                    (#"{"pulls": {"live": {"cam": "ftp://origin/live/cam"}}}"#, "pulls.live.cam: 'ftp://origin/live/cam' is not"),
                    (#"{"pulls": {"live": {"bad name": "rtmp://origin/live/cam"}}}"#, "pulls: invalid stream name 'live/bad name'"),
                    (#"{"drainReconnectTo": "http://other:8080"}"#, "drainReconnectTo: 'http://other:8080' is not rtmp://host[:port]"),
                    (#"{"drainGraceSeconds": -1}"#, "drainGraceSeconds must be ≥ 0"),
                ] {
                    try await scenario.checkConfigFails(json: json, saying: expected)
                }
            }
        }

        @Test("--log-format json writes one JSON object per line, a session's start and end with its id, stream, protocol, address and reason as fields; an unknown format or level fails --check-config")
        func jsonLogs() async throws {
            try await Scenario.run("json-logs") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let node = try await scenario.startNode(label: "node", arguments: ["--log-format", "json"])
                let publisher = try scenario.publish(media, to: node.rtmpURL("live", "cam"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(node, "live", "cam")
                _ = await publisher.stop()
                let ended = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) { node.log.contains("publisher session ended") }
                scenario.check(ended, "the publisher's end was not logged")
                var lines: [[String: Any]] = []
                for line in node.process.stderrText.split(separator: "\n") where !line.isEmpty {
                    guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                        scenario.check(false, "a log line that is not a JSON object: \(line.prefix(300))")
                        continue
                    }
                    scenario.check(object["time"] is String && object["level"] is String && object["message"] is String, "a line without time, level or message: \(object)")
                    lines.append(object)
                }
                let end = lines.first { $0["message"] as? String == "publisher session ended" } ?? [:]
                scenario.check((end["session"] as? String)?.hasPrefix("p-") == true && end["stream"] as? String == "live/cam" && end["protocol"] as? String == "rtmp"
                               && (end["from"] as? String)?.hasPrefix("127.0.0.1:") == true && end["reason"] != nil, "the publisher's end as JSON: \(end)")
                try await scenario.checkConfigFails(["--log-format", "xml"], saying: "unknown log format 'xml'")
                try await scenario.checkConfigFails(["--log-level", "verbose"], saying: "unknown log level 'verbose'")
            }
        }

        @Test("The playback port serves media, /healthz and /readyz only; the API and /metrics are on the admin plane, on loopback unless opened, and need the token there")
        func adminPlaneApart() async throws {
            try await Scenario.run("admin-plane") { scenario in
                let node = try await scenario.startNode(arguments: ["--admin-token", "plane-token"])
                for path in ["/metrics", "/api/v1/sessions", "/api/v1/streams", "/api/v1/node/drain", "/api/v1/pulls", "/api/v1/forwards"] {
                    let playback = try await HTTPClient.get(port: node.httpPort, path: path)
                    scenario.check(playback.status == 404, "the playback port answered \(playback.status) to \(path)")
                }
                for path in ["/healthz", "/readyz"] {
                    scenario.check(try await HTTPClient.get(port: node.httpPort, path: path).status == 200, "the playback port does not answer \(path)")
                    scenario.check(try await HTTPClient.get(port: node.adminPort, path: path).status == 200, "the admin plane does not answer \(path)")
                }
                let metrics = try await HTTPClient.get(port: node.adminPort, path: "/metrics")
                scenario.check(metrics.status == 200 && metrics.bodyText.contains("estuary_"), "the admin plane's /metrics answered \(metrics.status)")
                let bare = try await HTTPClient.get(port: node.adminPort, path: "/api/v1/sessions")
                scenario.check(bare.status == 401, "the admin API without a token answered \(bare.status)")
                let (status, _) = try await node.admin("/api/v1/sessions", token: "plane-token")
                scenario.check(status == 200, "the admin API with its token answered \(status)")
                // Loopback by default: the check prints where it listens.
                let check = try scenario.launch(executable: try TestEnvironment.nodeBinary(), ["--check-config"], name: "check-default")
                _ = await check.waitForExit(timeout: .seconds(10))
                scenario.check(check.stdoutText.contains("admin 127.0.0.1:8090"), "the admin plane's default address: \(check.stdoutText)")
            }
        }

        @Test("Roles on one host get HTTP ports that do not collide; a node whose coordinator never answers is not ready")
        func roleDefaultsAndReadiness() async throws {
            try await Scenario.run("role-defaults") { scenario in
                let binary = try TestEnvironment.nodeBinary()
                for (role, port) in [("all", 8080), ("relay", 8080), ("coordinator", 8080), ("ingest", 8081), ("transcode", 8082)] {
                    let check = try scenario.launch(executable: binary, ["--role", role, "--nats", "nats://127.0.0.1:4222", "--check-config"], name: "check-\(role)")
                    _ = await check.waitForExit(timeout: .seconds(10))
                    scenario.check(check.stdoutText.contains("HTTP :\(port), admin 127.0.0.1:\(port + 10)"), "role \(role): \(check.stdoutText)")
                }

                let nats = try await NATSServerProcess.start(scenario)
                let ingest = try await scenario.startNode(label: "ingest", arguments: ["--role", "ingest", "--nats", nats.url, "--node-id", "ingest-1", "--coordinator-node", "nobody"])
                try await Task.sleep(for: .seconds(2))
                let notReady = try await HTTPClient.get(port: ingest.httpPort, path: "/readyz")
                scenario.check(notReady.status == 503, "an ingest whose coordinator never answered reports \(notReady.status) on /readyz")
                _ = try await scenario.startNode(label: "coordinator", arguments: ["--role", "coordinator", "--nats", nats.url, "--node-id", "nobody"])
                let ready = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) {
                    (try? await HTTPClient.get(port: ingest.httpPort, path: "/readyz"))?.status == 200
                }
                scenario.check(ready, "the ingest did not become ready once its coordinator answered")
            }
        }
    }
}
