import Foundation
import TestSupport
import NIOCore
import RTMP
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension IntegrationTests {
    /// Who may connect and who may publish: connection limits, publish ownership, rendition
    /// names and the transcode cap, each against a node of its own.
    @Suite("Admission")
    struct AdmissionTests {
        /// A node whose per-address limit is `limit`, loopback included: the test's clients
        /// are on loopback, which is exempt by default (a local proxy).
        static func limitedPerAddress(_ limit: Int) -> NodeConfig {
            var config = NodeConfig()
            config.maxConnectionsPerAddress = limit
            config.limitLoopbackConnections = true
            return config
        }

        @Test("Connections over the per-address limit are refused at accept: RTMP closed, HTTP 503; another address still gets in")
        func connectionLimitsPerAddress() async throws {
            try await Scenario.run("connection-limits") { scenario in
                let node = try await scenario.startNode(Self.limitedPerAddress(4))

                // RTMP: four connections from 127.0.0.1 finish their handshakes; the fifth is closed at once.
                var held: [RTMPRawClient] = []
                for _ in 0..<4 {
                    let client = try await RTMPRawClient.connect(port: node.rtmpPort)
                    scenario.track(client.connection)
                    try await client.plainHandshake()
                    held.append(client)
                }
                let fifth = try await RTMPRawClient.connect(port: node.rtmpPort)
                scenario.track(fifth.connection)
                scenario.check(await fifth.connection.waitForClose(timeout: .seconds(3)), "a fifth RTMP connection from one address was not closed")
                scenario.check(fifth.connection.count == 0, "the refused RTMP connection was sent \(fifth.connection.count) bytes")
                let other = try await RTMPRawClient.connect(port: node.rtmpPort, from: "127.0.0.2")
                scenario.track(other.connection)
                try await other.plainHandshake()
                scenario.check(!other.connection.isClosed, "a connection from another address was refused")

                // HTTP: four open connections from 127.0.0.1; the fifth is answered 503 and closed.
                var httpHeld: [RawConnection] = []
                for _ in 0..<4 {
                    let connection = try await RawConnection.connect(port: node.httpPort)
                    scenario.track(connection)
                    httpHeld.append(connection)
                }
                try await Task.sleep(for: .milliseconds(200))
                let refused = try await RawConnection.connect(port: node.httpPort)
                scenario.track(refused)
                _ = await refused.trySend(Array("GET /healthz HTTP/1.1\r\nHost: estuary\r\n\r\n".utf8))
                scenario.check(await refused.waitForClose(timeout: .seconds(3)), "a fifth HTTP connection from one address was not closed")
                let answer = String(decoding: refused.bytes(), as: UTF8.self)
                scenario.check(answer.hasPrefix("HTTP/1.1 503"), "a fifth HTTP connection was answered: \(answer.prefix(80))")

                // Closing them gives the slots back.
                for client in held { await client.close() }
                for connection in httpHeld { await connection.close() }
                try await Task.sleep(for: .milliseconds(300))
                let health = try await HTTPClient.get(port: node.httpPort, path: "/healthz")
                scenario.check(health.status == 200, "after the connections closed, /healthz answered \(health.status)")
                let metrics = try await node.metrics()
                scenario.check(
                    metrics.sum("estuary_rtmp_connections_refused_total", labels: ["reason": "address_connection_limit"]) >= 1,
                    "no RTMP refusal counted: \(metrics.describe("estuary_rtmp_connections_refused_total"))"
                )
                scenario.check(
                    metrics.sum("estuary_http_connections_closed_total", labels: ["reason": "address_connection_limit"]) >= 1,
                    "no HTTP refusal counted: \(metrics.describe("estuary_http_connections_closed_total"))"
                )
            }
        }

        @Test("One host opens no more HLS sessions than the per-address cap: the next master is 503, another host still plays, an ended session gives its slot back")
        func hlsSessionsPerAddress() async throws {
            try await Scenario.run("hls-sessions-per-address") { scenario in
                let node = try await scenario.startNode(Self.limitedPerAddress(3))
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                _ = try scenario.publish(media, to: node.rtmpURL("live", "cam"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(node, "live", "cam")
                let master = "http://127.0.0.1:\(node.httpPort)/live/cam/index.m3u8"
                /// curl from `source` (a loopback address of its own): the status, the body and
                /// the Retry-After header.
                func get(from source: String, _ name: String) async throws -> (status: Int, body: String, retryAfter: String) {
                    let run = try await scenario.run(
                        "curl", ["-s", "--max-time", "5", "--interface", source, "-w", "\n%header{retry-after}\n%{http_code}", master], name: name, timeout: .seconds(10)
                    )
                    let lines = run.stdout.split(separator: "\n", omittingEmptySubsequences: false)
                    return (Int(lines.last ?? "") ?? 0, lines.dropLast(2).joined(separator: "\n"), String(lines.dropLast().last ?? ""))
                }
                // The master answers once the stream has a segment: waited for from a third
                // address, whose first 200 is its only session.
                var ready = false
                for attempt in 0..<60 where !ready {
                    ready = try await get(from: "127.0.0.3", "curl-wait-\(attempt)").status == 200
                    if !ready { try await Task.sleep(for: .milliseconds(500)) }
                }
                try scenario.require(ready, "the master never answered 200")
                // Three players from 127.0.0.1: three sessions (each master opens one).
                for index in 0..<3 {
                    let answer = try await get(from: "127.0.0.1", "curl-\(index)")
                    scenario.check(answer.status == 200 && answer.body.contains("session=v-"), "master \(index) from 127.0.0.1: \(answer.status) \(answer.body.prefix(200))")
                }
                // The fourth: 503, saying why; the node is otherwise untouched.
                let fourth = try await get(from: "127.0.0.1", "curl-fourth")
                scenario.check(fourth.status == 503, "a fourth master from 127.0.0.1 answered \(fourth.status)")
                scenario.check(fourth.body.contains("HLS players are open from this address"), "the 503 said: \(fourth.body.prefix(200))")
                scenario.check(fourth.retryAfter == "5", "the 503 did not say when to try again (Retry-After: '\(fourth.retryAfter)')")
                let other = try await get(from: "127.0.0.2", "curl-other")
                scenario.check(other.status == 200 && other.body.contains("#EXT-X-STREAM-INF"), "a master from 127.0.0.2 answered \(other.status)")
                let metrics = try await node.metrics()
                scenario.check(
                    metrics.sum("estuary_hls_sessions_refused_total", labels: ["reason": "address_limit"]) >= 1,
                    "no refusal counted: \(metrics.describe("estuary_hls_sessions_refused_total"))"
                )
                scenario.check(node.log.contains("HLS player refused"), "the refusal was not logged")
                // The sessions end after three target durations without a request (6 s by
                // default): then the host may open one again.
                let reopened = await eventually(timeout: .seconds(20), interval: .seconds(1)) {
                    (try? await get(from: "127.0.0.1", "curl-again").status) == 200
                }
                scenario.check(reopened, "after its sessions expired, 127.0.0.1 was still refused")
            }
        }

        @Test("A stalled publisher's stream can be resumed only with its own credentials; viewers never see a stranger's media")
        func publishOwnership() async throws {
            try await Scenario.run("publish-ownership") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 8))

                for (stream, query, stranger) in [("by-address", "", "127.0.0.2"), ("by-key", "?key=alpha", "127.0.0.1")] {
                    let publisher = try scenario.publish(media, to: node.rtmpURL("live", stream + query), name: "publisher-\(stream)", loop: true)
                    try await scenario.waitUntilLive(node, "live", stream)
                    let viewer = try await scenario.openViewer(node, "live", stream)
                    try await Task.sleep(for: .seconds(1))
                    publisher.send(signal: SIGKILL)
                    _ = await publisher.waitForExit(timeout: .seconds(3))
                    try await Task.sleep(for: .milliseconds(300))

                    // A stranger (another address, or another key) is refused during the grace period.
                    let strangerQuery = query.isEmpty ? "" : "?key=beta"
                    let (intruder, refused) = try await RTMPRawClient.publishing(scenario, port: node.rtmpPort, app: "live", name: stream + strangerQuery, from: stranger)
                    scenario.check(refused == "NetStream.Publish.BadName", "\(stream): a stranger's publish during the grace period got \(refused)")
                    await intruder.close()

                    // The owner (same address, or same key) resumes it.
                    let (owner, resumed) = try await RTMPRawClient.publishing(scenario, port: node.rtmpPort, app: "live", name: stream + query)
                    scenario.check(resumed == "NetStream.Publish.Start", "\(stream): the owner's publish got \(resumed)")
                    scenario.check(!viewer.isClosed, "\(stream): the viewer was disconnected")
                    await owner.close()
                }
                let metrics = try await node.metrics()
                scenario.check(
                    metrics.sum("estuary_ingest_publisher_takeovers_refused_total") >= 2,
                    "refused takeovers not counted: \(metrics.describe("estuary_ingest_publisher_takeovers_refused_total"))"
                )
            }
        }

        @Test("A source picture wider than 8192 is refused by the transcoder before any decoder is opened (dimensions)")
        func oversizedSourceIsRefused() async throws {
            try await Scenario.run("oversized-source") { scenario in
                var config = NodeConfig()
                config.ladders = ["abr": [.init(name: "144p", height: 144, videoBitRate: 100_000)]]
                let node = try await scenario.startNode(config)
                let clip = scenario.file("wide.flv")
                let make = try await scenario.run(
                    "ffmpeg",
                    ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=8208x16:rate=10", "-t", "3", "-c:v", "libx264", "-preset", "ultrafast", "-g", "10", "-f", "flv", clip.path],
                    name: "make-wide", timeout: .seconds(60)
                )
                try scenario.require(make.succeeded, "cannot make an 8208x16 clip: \(make)")
                let publisher = try scenario.launch("ffmpeg", ["-nostdin", "-v", "error", "-re", "-stream_loop", "-1", "-i", clip.path, "-c", "copy", "-f", "flv", node.rtmpURL("abr", "wide")], name: "publisher-wide")
                let refused = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) {
                    (try? await node.metrics().sum("estuary_transcode_refused_sequence_headers_total", labels: ["reason": "dimensions"])) ?? 0 >= 1
                }
                scenario.check(refused, "the transcoder did not refuse an 8208x16 source")
                scenario.check(publisher.isRunning, "the publisher of the oversized source was closed; only its transcode should be refused")
                let health = try await HTTPClient.get(port: node.httpPort, path: "/healthz")
                scenario.check(health.status == 200, "/healthz answered \(health.status)")
            }
        }

        @Test("Publishing a rendition's name is refused (BadName), and publishes over the transcode cap are Denied")
        func renditionNamesAndTranscodeCap() async throws {
            try await Scenario.run("rendition-names") { scenario in
                var config = NodeConfig()
                config.maxTranscodes = 1
                config.maxStreams = 2
                config.ladders = ["abr": [.init(name: "144p", height: 144, videoBitRate: 100_000)]]
                let node = try await scenario.startNode(config)

                func publish(_ name: String, app: String = "abr") async throws -> (RTMPRawClient, String) {
                    try await RTMPRawClient.publishing(scenario, port: node.rtmpPort, app: app, name: name)
                }
                let (_, rendition) = try await publish("demo_144p")
                scenario.check(rendition == "NetStream.Publish.BadName", "publishing abr/demo_144p (a rendition name) got \(rendition)")
                // A rung's own address is `abr/demo/144p` (application `abr/demo`, stream `144p`):
                // nobody may publish there either.
                let (_, rungAddress) = try await publish("144p", app: "abr/demo")
                scenario.check(rungAddress == "NetStream.Publish.BadName", "publishing to abr/demo/144p (a rung's address) got \(rungAddress)")
                let (first, started) = try await publish("one")
                scenario.check(started == "NetStream.Publish.Start", "the first abr publish got \(started)")
                let (_, second) = try await publish("two")
                scenario.check(second == "NetStream.Publish.Denied", "a second abr publish over a cap of 1 got \(second)")
                // `_` stays legal in names of applications without a ladder.
                let (live, liveCode) = try await publish("demo_144p", app: "live")
                scenario.check(liveCode == "NetStream.Publish.Start", "live/demo_144p got \(liveCode)")
                // The node's stream cap: `abr/one` and `live/demo_144p` make two.
                let (full, fullCode) = try await publish("fourth", app: "live")
                scenario.check(fullCode == "NetStream.Publish.Denied", "a publish over the node's stream cap got \(fullCode)")
                await full.close()
                await live.close()

                // The slot comes back when the publisher leaves (and the streams end after their 1 s grace).
                await first.close()
                try await Task.sleep(for: .milliseconds(1800))
                let (_, again) = try await publish("two")
                scenario.check(again == "NetStream.Publish.Start", "an abr publish after the first left got \(again)")
                let metrics = try await node.metrics()
                scenario.check(metrics.sum("estuary_publishes_refused_total", labels: ["reason": "rendition_name"]) >= 1, "rendition refusal not counted")
                scenario.check(metrics.sum("estuary_rtmp_connections_closed_total", labels: ["reason": "invalid_stream_name"]) >= 1, "the refusal of a rung's address is not counted")
                scenario.check(metrics.sum("estuary_publishes_refused_total", labels: ["reason": "transcode_capacity"]) >= 1, "capacity refusal not counted")
                scenario.check(metrics.sum("estuary_publishes_refused_total", labels: ["reason": "stream_capacity"]) >= 1, "stream cap refusal not counted")
            }
        }
    }
}
