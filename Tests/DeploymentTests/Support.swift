import Foundation
import Yams

/// A failure with a readable reason.
struct DeploymentFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The repository, the `node` binary and the deployment files.
enum Deployment {
    /// The package root: the nearest directory above this file that holds Package.swift.
    static let repositoryRoot: URL = {
        var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while directory.path != "/" {
            if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
                return directory
            }
            directory = directory.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    }()

    static func file(_ relativePath: String) -> URL {
        repositoryRoot.appendingPathComponent(relativePath)
    }

    /// The server binary: `ESTUARY_NODE`, or `<repo>/.build/debug/node` (as the integration tests).
    static func nodeBinary() throws -> URL {
        if let override = ProcessInfo.processInfo.environment["ESTUARY_NODE"], !override.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: override) else {
                throw DeploymentFailure("ESTUARY_NODE=\(override) is not an executable file")
            }
            return URL(fileURLWithPath: override)
        }
        let candidate = file(".build/debug/node")
        guard FileManager.default.isExecutableFile(atPath: candidate.path) else {
            throw DeploymentFailure("\(candidate.path) does not exist: run `swift build` first or set ESTUARY_NODE")
        }
        return candidate
    }

    /// An executable found on PATH.
    static func tool(_ name: String) throws -> URL {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin"] {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw DeploymentFailure("\(name) is not on PATH")
    }
}

/// The services of docker/docker-compose.yml, read with Yams.
struct ComposeFile {
    struct Service {
        let name: String
        let node: Node
        /// The `command:` list, or nil when it is missing or not a list of scalars.
        var command: [String]? {
            guard let sequence = node["command"]?.sequence else { return nil }
            let values = sequence.compactMap { $0.scalar?.string }
            return values.count == sequence.count ? values : nil
        }
        /// The healthcheck's `test:` list.
        var healthcheck: [String]? {
            guard let sequence = node["healthcheck"]?["test"]?.sequence else { return nil }
            return sequence.compactMap { $0.scalar?.string }
        }
        /// The value after `flag` in the command.
        func argument(_ flag: String) -> String? {
            guard let command, let index = command.firstIndex(of: flag), index + 1 < command.count else { return nil }
            return command[index + 1]
        }
        /// `environment:` as a map, `${VAR:-default}` resolved to its default.
        var environment: [String: String] {
            var result: [String: String] = [:]
            if let mapping = node["environment"]?.mapping {
                for (key, value) in mapping {
                    guard let key = key.string, let value = value.string else { continue }
                    result[key] = Self.resolveDefault(value)
                }
            }
            return result
        }
        static func resolveDefault(_ value: String) -> String {
            guard value.hasPrefix("${"), value.hasSuffix("}"), let range = value.range(of: ":-") else { return value }
            return String(value[range.upperBound..<value.index(before: value.endIndex)])
        }
    }

    let services: [Service]

    static func load() throws -> ComposeFile {
        let url = Deployment.file("docker/docker-compose.yml")
        let text = try String(contentsOf: url, encoding: .utf8)
        guard let root = try Yams.compose(yaml: text) else { throw DeploymentFailure("\(url.path) is empty") }
        guard let services = root["services"]?.mapping else { throw DeploymentFailure("\(url.path) has no services mapping") }
        return ComposeFile(services: services.compactMap { key, value in
            key.string.map { Service(name: $0, node: value) }
        })
    }

    subscript(name: String) -> Service? { services.first { $0.name == name } }
}

/// The outcome of a bounded process run.
struct ProcessRun {
    let status: Int32
    let output: String
    let timedOut: Bool
    var summary: String { "exit \(status)\(timedOut ? " (timed out)" : ""):\n\(output)" }
}

/// Runs `executable` with `arguments`, stdout and stderr together, killed after `timeout`.
func runProcess(
    _ executable: URL,
    _ arguments: [String],
    environment extra: [String: String] = [:],
    timeout: Duration
) async throws -> ProcessRun {
    let outputURL = FileManager.default.temporaryDirectory
        .appendingPathComponent("estuary-deploy-\(UUID().uuidString.prefix(8)).out")
    _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
    defer { try? FileManager.default.removeItem(at: outputURL) }
    let handle = try FileHandle(forWritingTo: outputURL)
    defer { try? handle.close() }

    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    process.currentDirectoryURL = Deployment.repositoryRoot
    process.environment = ProcessInfo.processInfo.environment.merging(extra) { _, new in new }
    process.standardOutput = handle
    process.standardError = handle
    process.standardInput = FileHandle.nullDevice
    try process.run()

    let deadline = ContinuousClock.now + timeout
    var timedOut = false
    while process.isRunning {
        if ContinuousClock.now >= deadline {
            timedOut = true
            process.terminate()
            let killDeadline = ContinuousClock.now + .seconds(5)
            while process.isRunning, ContinuousClock.now < killDeadline {
                try? await Task.sleep(for: .milliseconds(50))
            }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            break
        }
        try? await Task.sleep(for: .milliseconds(20))
    }
    process.waitUntilExit()
    let output = (try? String(contentsOf: outputURL, encoding: .utf8)) ?? ""
    return ProcessRun(status: process.terminationStatus, output: output, timedOut: timedOut)
}
