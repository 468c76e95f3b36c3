import Foundation
import TestSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The settings an integration test gives a node through `--config` (all optional).
struct NodeConfig: Encodable, Sendable {
    var maxMessageSize: Int?
    var maxChunkSize: Int?
    var maxChunkStreams: Int?
    var subscriberQueueBytes: Int?
    var gopCacheMaxFrames: Int? = 2000
    var gopCacheMaxBytes: Int? = 64 * 1024 * 1024
    var publisherIdleTakeoverSeconds: Int? = 2
    var publisherGraceSeconds: Int? = 1
    var handshakeTimeoutSeconds: Int?
    var connectTimeoutSeconds: Double?
    var sessionStartTimeoutSeconds: Double?
    var publisherIdleTimeoutSeconds: Double?
    var writeStallTimeoutSeconds: Double?
    var httpHeaderTimeoutSeconds: Double?
    var httpIdleTimeoutSeconds: Double?
    var maxConnections: Int?
    var maxConnectionsPerAddress: Int?
    var limitLoopbackConnections: Bool?
    var negotiateVideoCodecs: Bool?
    var srtMaxPublishers: Int?
    var srtMaxPlayers: Int?
    var srtMaxCallersPerAddress: Int?
    var srtHandshakeWaitMilliseconds: Int?
    var maxTranscodes: Int?
    var maxStreams: Int?
    var maxMetadataBytes: Int?
    var maxReassemblyBytes: Int?
    var maxReassemblyBytesPerConnection: Int?
    var messageStallTimeoutSeconds: Double?
    var hlsSegmentSeconds: Double?
    var hlsPartSeconds: Double?
    var hlsWindowSegments: Int?
    var hlsMaxBytes: Int?
    /// Ingest in a cluster: publishing needs a stream key.
    var requireStreamKeys: Bool?
    /// Transcoding ladders by application (nil: the node's default, `abr` only).
    var ladders: [String: [Rung]]?
    /// Push-forward targets by application (`rtmp://host:port/app`).
    var forwards: [String: [String]]?
    /// How long SIGTERM drains: 0 in tests (stop at once, as `stop()` expects) unless a test
    /// drains on purpose.
    var drainGraceSeconds: Double? = 0
    var drainReconnectTo: String?
    /// Static pulls: application → stream name → source URL.
    var pulls: [String: [String: String]]?
    /// Webhooks by application (`*` for all).
    var hooks: [String: Hooks]?
    var admissionTimeoutSeconds: Double?

    struct Hook: Encodable, Sendable {
        var url: String
        var timeoutSeconds: Double?
        var retries: Int?
    }

    struct Hooks: Encodable, Sendable {
        var onPublish: Hook?
        var onUnpublish: Hook?
        var onPlay: Hook?
        var onStop: Hook?
        var failOpen: Bool?
    }

    struct Rung: Encodable, Sendable {
        var name: String
        var height: Int
        var videoBitRate: Int
    }
}

/// A running `node` process on free ports of 127.0.0.1, with its log in a file.
final class NodeProcess: Sendable {
    let process: ChildProcess
    let rtmpPort: Int
    let httpPort: Int
    /// The admin plane: the API, `/metrics`, the sessions.
    let adminPort: Int
    let directory: URL
    private let stopping = Mutex(false)

    private init(process: ChildProcess, rtmpPort: Int, httpPort: Int, adminPort: Int, directory: URL) {
        self.adminPort = adminPort
        self.process = process
        self.rtmpPort = rtmpPort
        self.httpPort = httpPort
        self.directory = directory
    }

    /// Starts a node and waits (bounded) until `/healthz` answers 200 and the RTMP port accepts
    /// connections. Retries on fresh ports if the process dies during startup (a port race).
    /// `arguments` are added to the command line (`--role relay --nats …`).
    /// `ports` fixes the RTMP and HTTP ports, and the admin port when a third is given (a
    /// node restarted where its peers expect it).
    static func start(config: NodeConfig, directory: URL, label: String = "node", arguments extra: [String] = [], ports fixed: [Int]? = nil) async throws -> NodeProcess {
        let binary = try TestEnvironment.nodeBinary()
        var lastFailure = ""
        for attempt in 1...3 {
            let ports: [Int]
            if let fixed {
                ports = fixed.count >= 3 ? fixed : fixed + (try await FreePorts.allocate(1))
            } else {
                ports = try await FreePorts.allocate(3)
            }
            let dataDirectory = directory.appendingPathComponent("\(label)-data-\(attempt)", isDirectory: true)
            try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
            let configURL = directory.appendingPathComponent("\(label)-config-\(attempt).json")
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(config).write(to: configURL)
            let process = try ChildProcess.launch(
                binary,
                [
                    "--rtmp-port", String(ports[0]),
                    "--http-port", String(ports[1]),
                    "--admin-port", String(ports[2]),
                    "--data-dir", dataDirectory.path,
                    "--log-level", "info",
                    "--config", configURL.path,
                    "--bind", "127.0.0.1",
                ] + extra,
                name: "\(label)-\(attempt)",
                directory: directory
            )
            let node = NodeProcess(process: process, rtmpPort: ports[0], httpPort: ports[1], adminPort: ports[2], directory: directory)
            // Transcoders and the coordinator have no RTMP listener.
            let rtmp = !(extra.contains("transcode") || extra.contains("coordinator"))
            let ready = await eventually(timeout: .seconds(20), interval: .milliseconds(50)) {
                guard process.isRunning else { return true }
                return await node.isReady(rtmp: rtmp)
            }
            if ready, process.isRunning {
                return node
            }
            await process.stop()
            lastFailure = "attempt \(attempt): \(process.termination.map(\.description) ?? "not ready within 20 s"); log:\n\(tail(process.stderrText + process.stdoutText, lines: 40))"
        }
        throw IntegrationFailure("node did not start:\n\(lastFailure)")
    }

    private func isReady(rtmp: Bool) async -> Bool {
        guard let health = try? await HTTPClient.get(port: self.httpPort, path: "/healthz", timeout: .seconds(1)),
            health.status == 200
        else { return false }
        guard rtmp else { return true }
        guard let probe = try? await RawConnection.connect(port: self.rtmpPort, timeout: .seconds(1)) else { return false }
        await probe.close()
        return true
    }

    var rtmpBase: String { "rtmp://127.0.0.1:\(self.rtmpPort)" }
    var httpBase: String { "http://127.0.0.1:\(self.httpPort)" }

    func rtmpURL(_ app: String, _ name: String) -> String { "\(self.rtmpBase)/\(app)/\(name)" }
    func flvURL(_ app: String, _ name: String) -> String { "\(self.httpBase)/\(app)/\(name).flv" }

    /// The node's log (stderr and stdout).
    var log: String { self.process.stderrText + self.process.stdoutText }

    /// Scrapes `/metrics`.
    func metrics() async throws -> PrometheusSample {
        let response = try await HTTPClient.get(port: self.adminPort, path: "/metrics", timeout: .seconds(5))
        guard response.status == 200 else {
            throw IntegrationFailure("GET /metrics answered \(response.status)")
        }
        return PrometheusSample(text: response.bodyText)
    }

    /// The value of `estuary_rtmp_connections_closed_total{reason=...}` (0 when absent).
    func closedConnections(reason: String) async throws -> Double {
        try await self.metrics().sum("estuary_rtmp_connections_closed_total", labels: ["reason": reason])
    }

    /// True once the test asked the node to stop (an exit after that is not a crash).
    var stopRequested: Bool { self.stopping.withLock { $0 } }

    /// The test expects the node to exit by itself (a drain): an exit is not a crash.
    func expectExit() {
        self.stopping.withLock { $0 = true }
    }

    /// kill -9, expected by the test (not reported as a crash).
    func kill() async {
        self.stopping.withLock { $0 = true }
        self.process.send(signal: SIGKILL)
        _ = await self.process.waitForExit(timeout: .seconds(5))
    }

    /// Sends SIGTERM and returns at once (the graceful-shutdown test watches what follows).
    func terminate() {
        self.stopping.withLock { $0 = true }
        self.process.send(signal: SIGTERM)
    }

    /// SIGTERM, then SIGKILL after 3 s.
    @discardableResult
    func stop() async -> Termination? {
        self.stopping.withLock { $0 = true }
        return await self.process.stop(grace: .seconds(3))
    }
}

/// A parsed Prometheus text exposition.
struct PrometheusSample {
    struct Line {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    let text: String
    let lines: [Line]

    init(text: String) {
        self.text = text
        var lines: [Line] = []
        for rawLine in text.split(separator: "\n") {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            var name = ""
            var labels: [String: String] = [:]
            var rest = Substring(line)
            if let brace = rest.firstIndex(of: "{"), let close = rest.lastIndex(of: "}") {
                name = String(rest[..<brace])
                labels = Self.parseLabels(rest[rest.index(after: brace)..<close])
                rest = rest[rest.index(after: close)...]
            } else if let space = rest.firstIndex(of: " ") {
                name = String(rest[..<space])
                rest = rest[space...]
            } else {
                continue
            }
            let valueText = rest.trimmingCharacters(in: .whitespaces).split(separator: " ").first.map(String.init) ?? ""
            guard let value = Double(valueText) else { continue }
            lines.append(Line(name: name, labels: labels, value: value))
        }
        self.lines = lines
    }

    private static func parseLabels(_ text: Substring) -> [String: String] {
        var labels: [String: String] = [:]
        var index = text.startIndex
        while index < text.endIndex {
            guard let equals = text[index...].firstIndex(of: "=") else { break }
            let key = text[index..<equals].trimmingCharacters(in: CharacterSet(charactersIn: " ,"))
            var cursor = text.index(after: equals)
            guard cursor < text.endIndex, text[cursor] == "\"" else { break }
            cursor = text.index(after: cursor)
            var value = ""
            while cursor < text.endIndex, text[cursor] != "\"" {
                if text[cursor] == "\\" {
                    cursor = text.index(after: cursor)
                    guard cursor < text.endIndex else { break }
                }
                value.append(text[cursor])
                cursor = text.index(after: cursor)
            }
            labels[key] = value
            index = cursor < text.endIndex ? text.index(after: cursor) : cursor
        }
        return labels
    }

    /// The sum of every sample named `name` whose labels include `labels`.
    func sum(_ name: String, labels: [String: String] = [:]) -> Double {
        self.lines
            .filter { line in line.name == name && labels.allSatisfy { line.labels[$0.key] == $0.value } }
            .reduce(0) { $0 + $1.value }
    }

    /// The sample lines of a metric, for messages.
    func describe(_ name: String) -> String {
        let matching = self.text.split(separator: "\n").filter { $0.hasPrefix(name) }
        return matching.isEmpty ? "(no \(name) samples)" : matching.joined(separator: "\n")
    }
}
