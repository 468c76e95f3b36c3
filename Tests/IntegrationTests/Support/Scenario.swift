import Foundation
import TestSupport
import Synchronization
import Testing

/// One integration test's world: a temporary directory, the processes and connections it
/// started (always ended at teardown), and failure bookkeeping so the node's log is printed
/// when (and only when) something failed.
final class Scenario: Sendable {
    let name: String
    let directory: URL
    private let started = ContinuousClock.now

    private struct State {
        var nodes: [NodeProcess] = []
        var processes: [ChildProcess] = []
        var connections: [RawConnection] = []
        /// Run last, after every process ended (network namespaces are removed here).
        var cleanups: [@Sendable () async -> Void] = []
        var failures = 0
    }

    private let state = Mutex(State())

    private init(name: String, directory: URL) {
        self.name = name
        self.directory = directory
    }

    /// Runs `body` in a fresh scenario and tears everything down afterwards, whatever happens.
    static func run(_ name: String, _ body: (Scenario) async throws -> Void) async throws {
        let scenario = Scenario(name: name, directory: try TestEnvironment.makeTemporaryDirectory(name))
        var thrown: (any Error)?
        do {
            try await body(scenario)
        } catch {
            thrown = error
        }
        await scenario.tearDown(threw: thrown)
        if let thrown {
            throw thrown
        }
    }

    // MARK: Assertions

    /// Records an issue (with `message`) when `condition` is false; returns `condition`.
    @discardableResult
    func check(
        _ condition: Bool,
        _ message: @autoclosure () -> String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> Bool {
        if !condition {
            self.state.withLock { $0.failures += 1 }
            Issue.record(Comment(rawValue: "[\(self.name)] \(message())"), sourceLocation: sourceLocation)
        }
        return condition
    }

    /// Throws with `message` unless `condition` holds.
    func require(_ condition: Bool, _ message: @autoclosure () -> String) throws {
        guard condition else { throw IntegrationFailure("[\(self.name)] \(message())") }
    }

    func note(_ text: String) {
        let elapsed = String(format: "%6.2f", (ContinuousClock.now - self.started).inSeconds)
        print("[\(self.name) +\(elapsed)s] \(text)")
    }

    // MARK: Resources

    func startNode(_ config: NodeConfig = NodeConfig(), label: String = "node", arguments: [String] = [], ports: [Int]? = nil) async throws -> NodeProcess {
        let node = try await NodeProcess.start(config: config, directory: self.directory, label: label, arguments: arguments, ports: ports)
        self.state.withLock { $0.nodes.append(node) }
        self.note("\(label) up: rtmp \(node.rtmpPort), http \(node.httpPort), pid \(node.process.pid)")
        return node
    }

    /// Starts a tool that is killed at teardown if still running.
    func launch(_ tool: String, _ arguments: [String], name: String) throws -> ChildProcess {
        try self.launch(executable: try TestEnvironment.tool(tool), arguments, name: name)
    }

    /// Starts a program by path (one the tests built) that is killed at teardown if still running.
    func launch(executable: URL, _ arguments: [String], name: String) throws -> ChildProcess {
        let process = try ChildProcess.launch(executable, arguments, name: name, directory: self.directory)
        self.state.withLock { $0.processes.append(process) }
        return process
    }

    /// Runs a tool to completion (killed after `timeout`).
    func run(_ tool: String, _ arguments: [String], name: String, timeout: Duration) async throws -> ToolRun {
        let start = ContinuousClock.now
        let process = try self.launch(tool, arguments, name: name)
        return await process.finish(timeout: timeout, startedAt: start)
    }

    /// Runs `cleanup` at teardown, after every process and node has ended.
    func atTearDown(_ cleanup: @escaping @Sendable () async -> Void) {
        self.state.withLock { $0.cleanups.append(cleanup) }
    }

    func track(_ connection: RawConnection) {
        self.state.withLock { $0.connections.append(connection) }
    }

    func file(_ name: String) -> URL {
        self.directory.appendingPathComponent(name)
    }

    // MARK: Teardown

    private func tearDown(threw error: (any Error)?) async {
        let (nodes, processes, connections) = self.state.withLock { ($0.nodes, $0.processes, $0.connections) }
        for connection in connections {
            await connection.close()
        }
        await withTaskGroup(of: Void.self) { group in
            for process in processes where process.isRunning {
                group.addTask { await process.killNow() }
            }
        }
        var nodeReports: [String] = []
        for node in nodes {
            if !node.process.isRunning, !node.stopRequested {
                self.check(false, "node pid \(node.process.pid) died during the test: \(node.process.termination.map(\.description) ?? "?")")
            }
            let termination = await node.stop()
            nodeReports.append("node pid \(node.process.pid) (rtmp \(node.rtmpPort), http \(node.httpPort)) ended: \(termination.map(\.description) ?? "still running")")
        }
        for cleanup in self.state.withLock({ $0.cleanups }).reversed() {
            await cleanup()
        }
        let failures = self.state.withLock { $0.failures }
        if error != nil || failures > 0 {
            var report = "===== [\(self.name)] FAILED"
            if let error { report += " with error: \(error)" }
            report += "\nfiles kept in \(self.directory.path)\n"
            for (node, line) in zip(nodes, nodeReports) {
                report += "----- \(line); log tail:\n\(tail(node.log, lines: 120))\n"
            }
            var shown = 0
            for process in processes where shown < 12 {
                let stderr = process.stderrText.trimmingCharacters(in: .whitespacesAndNewlines)
                guard !stderr.isEmpty else { continue }
                shown += 1
                report += "----- \(process.name) (\(process.termination.map(\.description) ?? "running")) stderr tail:\n\(tail(stderr, lines: 15))\n"
            }
            print(report)
        } else {
            try? FileManager.default.removeItem(at: self.directory)
        }
    }
}
