import Foundation
import TestSupport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A real `nats-server` on free loopback ports (client and HTTP monitoring), stopped at
/// teardown. It can be stopped and started again on the same ports.
final class NATSServerProcess: Sendable {
    let port: Int
    let monitorPort: Int
    private let scenario: Scenario
    private let current: Mutex<ChildProcess?>

    private init(port: Int, monitorPort: Int, scenario: Scenario) {
        self.port = port
        self.monitorPort = monitorPort
        self.scenario = scenario
        self.current = Mutex(nil)
    }

    var url: String { "nats://127.0.0.1:\(self.port)" }

    static func start(_ scenario: Scenario) async throws -> NATSServerProcess {
        let ports = try await FreePorts.allocate(2)
        let server = NATSServerProcess(port: ports[0], monitorPort: ports[1], scenario: scenario)
        try await server.start()
        return server
    }

    /// Starts the server and waits (bounded) until its monitoring endpoint answers.
    func start() async throws {
        let process = try self.scenario.launch("nats-server", ["-a", "127.0.0.1", "-p", String(self.port), "-m", String(self.monitorPort)], name: "nats-server")
        self.current.withLock { $0 = process }
        let up = await eventually(timeout: .seconds(10), interval: .milliseconds(50)) {
            (try? await HTTPClient.get(port: self.monitorPort, path: "/healthz", timeout: .seconds(1)))?.status == 200
        }
        try self.scenario.require(up, "nats-server did not come up on \(self.port)")
    }

    /// Kills the server (SIGKILL: no goodbye to the clients, as in a crash or a partition).
    func kill() async {
        let process = self.current.withLock { $0 }
        process?.send(signal: SIGKILL)
        _ = await process?.waitForExit(timeout: .seconds(5))
    }

    /// The subjects the client connection named `name` (a node id) is subscribed to.
    func subscriptions(of name: String) async throws -> [String]? {
        let response = try await HTTPClient.get(port: self.monitorPort, path: "/connz?subs=1", timeout: .seconds(3))
        guard response.status == 200,
              let json = try JSONSerialization.jsonObject(with: Data(response.bodyText.utf8)) as? [String: Any],
              let connections = json["connections"] as? [[String: Any]]
        else { return nil }
        guard let connection = connections.first(where: { $0["name"] as? String == name }) else { return nil }
        return connection["subscriptions_list"] as? [String] ?? []
    }
}

/// Three (or more) real `nats-server`s on loopback, routed to each other as one cluster
/// (`--cluster`, `--routes`), stopped at teardown. Nodes are given every server's URL.
final class NATSClusterProcess: Sendable {
    struct Server: Sendable {
        let port: Int
        let clusterPort: Int
        let monitorPort: Int
        let process: ChildProcess
    }

    let servers: [Server]

    private init(servers: [Server]) {
        self.servers = servers
    }

    /// Every server's client URL, comma-separated (what `--nats` takes).
    var urls: String { servers.map { "nats://127.0.0.1:\($0.port)" }.joined(separator: ",") }

    static func start(_ scenario: Scenario, count: Int = 3) async throws -> NATSClusterProcess {
        let ports = try await FreePorts.allocate(3 * count)
        let routes = (0..<count).map { "nats://127.0.0.1:\(ports[3 * $0 + 1])" }.joined(separator: ",")
        var servers: [Server] = []
        for index in 0..<count {
            let (port, clusterPort, monitorPort) = (ports[3 * index], ports[3 * index + 1], ports[3 * index + 2])
            let process = try scenario.launch("nats-server", [
                "-a", "127.0.0.1", "-p", String(port), "-m", String(monitorPort), "-n", "nats-\(index + 1)",
                "--cluster_name", "estuary", "--cluster", "nats://127.0.0.1:\(clusterPort)", "--routes", routes,
            ], name: "nats-\(index + 1)")
            servers.append(Server(port: port, clusterPort: clusterPort, monitorPort: monitorPort, process: process))
        }
        // Up, and routed to every other server.
        for server in servers {
            let routed = await eventually(timeout: .seconds(15), interval: .milliseconds(100)) {
                guard let response = try? await HTTPClient.get(port: server.monitorPort, path: "/routez", timeout: .seconds(1)), response.status == 200,
                      let json = try? JSONSerialization.jsonObject(with: Data(response.bodyText.utf8)) as? [String: Any]
                else { return false }
                return (json["num_routes"] as? Int ?? 0) >= count - 1
            }
            try scenario.require(routed, "nats-server on \(server.port) did not route to the other \(count - 1) within 15 s")
        }
        return NATSClusterProcess(servers: servers)
    }

    /// The index of the server the client connection named `name` (a node id) is on.
    func server(of name: String) async -> Int? {
        for (index, server) in servers.enumerated() {
            guard let response = try? await HTTPClient.get(port: server.monitorPort, path: "/connz", timeout: .seconds(2)), response.status == 200,
                  let json = try? JSONSerialization.jsonObject(with: Data(response.bodyText.utf8)) as? [String: Any],
                  let connections = json["connections"] as? [[String: Any]]
            else { continue }
            if connections.contains(where: { $0["name"] as? String == name }) { return index }
        }
        return nil
    }

    /// Kills server `index` (SIGKILL: its clients find out from their sockets).
    func kill(_ index: Int) async {
        servers[index].process.send(signal: SIGKILL)
        _ = await servers[index].process.waitForExit(timeout: .seconds(5))
    }
}
