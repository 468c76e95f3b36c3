import Foundation
import TestSupport

/// Network namespaces joined by one bridge (`Tests/Peers/netns_topology.py`), for tests of
/// nodes on separate hosts: each node of the topology is a namespace with its own address,
/// processes run inside with `ip netns exec`, and the namespaces are removed at teardown.
/// Nothing touches the host's own interfaces.
///
/// The kernel here has no `netem`, so delay between tiers comes from
/// `Tests/Peers/delay_proxy.py`, a userspace TCP proxy started in a namespace between them.
struct NetworkTopology: Sendable {
    struct Host: Decodable, Sendable {
        let netns: String
        let address: String
    }

    let prefix: String
    let hosts: [String: Host]
    private let scenario: Scenario

    private static var peers: URL? {
        TestEnvironment.repositoryRoot?.appendingPathComponent("Tests/Peers")
    }

    /// Makes one namespace per name, or returns nil after noting why namespaces cannot be
    /// made here (not root, no `ip`): the caller skips.
    static func up(_ names: [String], scenario: Scenario) async throws -> NetworkTopology? {
        guard let peers else {
            scenario.note("skipped: the repository's Tests/Peers is not found")
            return nil
        }
        let python = try TestEnvironment.python3()
        let script = peers.appendingPathComponent("netns_topology.py").path
        let check = try await Self.run(python, [script, "check"], name: "netns-check", scenario: scenario, timeout: .seconds(20))
        guard check.succeeded else {
            scenario.note("skipped: network namespaces are not available here: \(check.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) \(check.stderr)")
            return nil
        }
        let prefix = "est" + String(UInt32.random(in: 0x10000...0xFFFFF), radix: 16)
        scenario.atTearDown {
            _ = try? await Self.run(python, [script, "down", "--prefix", prefix], name: "netns-down", scenario: scenario, timeout: .seconds(30))
        }
        let up = try await Self.run(python, [script, "up", "--prefix", prefix, "--nodes", names.joined(separator: ",")], name: "netns-up", scenario: scenario, timeout: .seconds(60))
        try scenario.require(up.succeeded, "netns_topology.py up failed: \(up)")
        let hosts = try JSONDecoder().decode([String: Host].self, from: Data(up.stdout.utf8))
        scenario.note("network namespaces \(prefix)-*: \(hosts.keys.sorted().map { "\($0) \(hosts[$0]!.address)" }.joined(separator: ", "))")
        return NetworkTopology(prefix: prefix, hosts: hosts, scenario: scenario)
    }

    private static func run(_ executable: URL, _ arguments: [String], name: String, scenario: Scenario, timeout: Duration) async throws -> ToolRun {
        let start = ContinuousClock.now
        let process = try scenario.launch(executable: executable, arguments, name: name)
        return await process.finish(timeout: timeout, startedAt: start)
    }

    func address(_ host: String) throws -> String {
        guard let entry = hosts[host] else { throw IntegrationFailure("no host \(host) in the topology") }
        return entry.address
    }

    /// Starts `executable` inside `host`'s namespace (killed at teardown).
    func launch(in host: String, executable: URL, _ arguments: [String], name: String) throws -> ChildProcess {
        guard let entry = hosts[host] else { throw IntegrationFailure("no host \(host) in the topology") }
        return try scenario.launch("ip", ["netns", "exec", entry.netns, executable.path] + arguments, name: name)
    }

    /// Starts a tool from PATH inside `host`'s namespace.
    func launch(in host: String, _ tool: String, _ arguments: [String], name: String) throws -> ChildProcess {
        try launch(in: host, executable: try TestEnvironment.tool(tool), arguments, name: name)
    }

    /// Runs a tool inside `host`'s namespace to completion (killed after `timeout`).
    func run(in host: String, _ tool: String, _ arguments: [String], name: String, timeout: Duration) async throws -> ToolRun {
        let start = ContinuousClock.now
        let process = try launch(in: host, tool, arguments, name: name)
        return await process.finish(timeout: timeout, startedAt: start)
    }

    /// The HTTP status `url` answers from inside `host` (0 when nothing answers within
    /// `seconds`). A live stream never ends, so its body is cut off then.
    func status(from host: String, _ url: String, seconds: Int = 1) async throws -> Int {
        let run = try await run(in: host, "curl", ["-s", "-o", "/dev/null", "--max-time", String(seconds), "-w", "%{http_code}", url], name: "curl-status", timeout: .seconds(seconds + 5))
        return Int(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    /// Starts `node` in `host`'s namespace on the standard ports (1935, 8080) of its
    /// address, and waits (bounded) until it answers `/healthz`.
    func startNode(in host: String, label: String, config: NodeConfig = NodeConfig(), arguments: [String] = []) async throws -> ChildProcess {
        let address = try address(host)
        let data = scenario.directory.appendingPathComponent("\(label)-data", isDirectory: true)
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        let configURL = scenario.directory.appendingPathComponent("\(label)-config.json")
        try JSONEncoder().encode(config).write(to: configURL)
        let process = try launch(
            in: host, executable: try TestEnvironment.nodeBinary(),
            ["--bind", address, "--rtmp-port", "1935", "--http-port", "8080", "--admin-bind", address, "--admin-port", "8090", "--data-dir", data.path,
             "--log-level", "info", "--config", configURL.path] + arguments,
            name: label
        )
        let ready = await eventually(timeout: .seconds(20), interval: .milliseconds(200)) {
            guard process.isRunning else { return true }
            return (try? await status(from: host, "http://\(address):8080/healthz")) == 200
        }
        try scenario.require(ready && process.isRunning, "\(label) did not start in \(host): \(tail(process.stderrText, lines: 30))")
        scenario.note("\(label) up in \(host) (\(address)), pid \(process.pid)")
        return process
    }

    /// Starts a delay proxy in `host`'s namespace: `listen` (its address, `port`) forwards
    /// to `target`, each direction `delayMilliseconds` late.
    func startDelayProxy(in host: String, port: Int, to target: String, delayMilliseconds: Int, label: String) async throws -> ChildProcess {
        guard let peers = Self.peers else { throw IntegrationFailure("Tests/Peers not found") }
        let ready = scenario.directory.appendingPathComponent("\(label).ready")
        let process = try launch(
            in: host, executable: try TestEnvironment.python3(),
            [peers.appendingPathComponent("delay_proxy.py").path, "--listen", "\(try address(host)):\(port)", "--connect", target,
             "--delay-ms", String(delayMilliseconds), "--ready-file", ready.path],
            name: label
        )
        let up = await eventually(timeout: .seconds(10), interval: .milliseconds(50)) {
            !process.isRunning || FileManager.default.fileExists(atPath: ready.path)
        }
        try scenario.require(up && process.isRunning, "\(label) did not start: \(tail(process.stderrText, lines: 20))")
        return process
    }
}
