import Foundation
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
    private let current: Mutex<Subprocess?>

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
