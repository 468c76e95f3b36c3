import Foundation
import TestSupport
import Yams

/// A failure with a readable reason.
struct DeploymentFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The repository, the `estuary` binary and the deployment files.
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

    /// The server binary: `ESTUARY_NODE`, or `<repo>/.build/debug/estuary` (as the integration tests).
    static func nodeBinary() throws -> URL {
        if let override = ProcessInfo.processInfo.environment["ESTUARY_NODE"], !override.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: override) else {
                throw DeploymentFailure("ESTUARY_NODE=\(override) is not an executable file")
            }
            return URL(fileURLWithPath: override)
        }
        let candidate = file(".build/debug/estuary")
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
        /// The value after `flag` in the command (as written, not interpolated).
        func argument(_ flag: String) -> String? {
            guard let command, let index = command.firstIndex(of: flag), index + 1 < command.count else { return nil }
            return command[index + 1]
        }
        /// The command as compose runs it: every argument interpolated from `variables`.
        func interpolatedCommand(_ variables: [String: String]) throws -> [String] {
            guard let arguments = self.command else { throw DeploymentFailure("\(name): `command:` must be a list of strings") }
            return try arguments.map { try ComposeFile.interpolate($0, variables) }
        }
        /// `environment:` as written (`${…}` not interpolated).
        var rawEnvironment: [String: String] {
            var result: [String: String] = [:]
            if let mapping = node["environment"]?.mapping {
                for (key, value) in mapping {
                    guard let key = key.string, let value = value.string else { continue }
                    result[key] = value
                }
            }
            return result
        }
        /// `environment:` as compose passes it to the container: interpolated from `variables`.
        func interpolatedEnvironment(_ variables: [String: String]) throws -> [String: String] {
            try rawEnvironment.mapValues { try ComposeFile.interpolate($0, variables) }
        }
    }

    let root: Node
    let services: [Service]

    /// The secrets the compose file requires, as a deployment would set them: random per test run.
    static let testVariables: [String: String] = [
        "ESTUARY_ADMIN_TOKEN": randomToken(),
        "ESTUARY_NATS_TOKEN": randomToken(),
    ]

    /// 32 random bytes as 64 hex digits, like `openssl rand -hex 32`.
    static func randomToken() -> String {
        (0..<32).map { _ in
            let byte = UInt8.random(in: .min ... .max)
            return String(byte >> 4, radix: 16) + String(byte & 0x0f, radix: 16)
        }.joined()
    }

    static func load() throws -> ComposeFile {
        let url = Deployment.file("docker/docker-compose.yml")
        let text = try String(contentsOf: url, encoding: .utf8)
        guard let root = try Yams.compose(yaml: text) else { throw DeploymentFailure("\(url.path) is empty") }
        guard let services = root["services"]?.mapping else { throw DeploymentFailure("\(url.path) has no services mapping") }
        return ComposeFile(root: root, services: services.compactMap { key, value in
            key.string.map { Service(name: $0, node: value) }
        })
    }

    subscript(name: String) -> Service? { services.first { $0.name == name } }

    /// Every scalar of the file (keys and values), as written: where `${…}` can appear.
    var allScalars: [String] { Self.scalars(of: root) }

    private static func scalars(of node: Node) -> [String] {
        if let scalar = node.scalar { return [scalar.string] }
        if let mapping = node.mapping { return mapping.flatMap { scalars(of: $0.key) + scalars(of: $0.value) } }
        if let sequence = node.sequence { return sequence.flatMap { scalars(of: $0) } }
        return []
    }
}

/// One `${…}` of compose's interpolation syntax.
struct ComposeReference: Equatable, CustomStringConvertible {
    let name: String
    /// `""` (`${NAME}`), `"-"`, `":-"` (a default), `"?"` or `":?"` (required, with a message).
    let operation: String
    /// The default, or the message of a required variable.
    let word: String

    var description: String { "${\(name)\(operation)\(word)}" }
    var isRequired: Bool { operation.hasSuffix("?") }
    var hasDefault: Bool { operation.hasSuffix("-") }

    /// Parses the text between `${` and `}`.
    init(parsing body: Substring) throws {
        let nameEnd = body.firstIndex { !($0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_")) } ?? body.endIndex
        let name = String(body[..<nameEnd])
        guard let first = name.first, !first.isNumber else { throw DeploymentFailure("no variable name in ${\(body)}") }
        self.name = name
        var rest = body[nameEnd...]
        var operation = ""
        if rest.first == ":" {
            operation = ":"
            rest = rest.dropFirst()
        }
        if let symbol = rest.first, symbol == "-" || symbol == "?" {
            operation.append(symbol)
            rest = rest.dropFirst()
        } else if !rest.isEmpty || !operation.isEmpty {
            throw DeploymentFailure("unsupported interpolation ${\(body)}")
        }
        self.operation = operation
        word = String(rest)
    }

    /// The value compose substitutes, or the error with which it refuses to start.
    func resolve(_ variables: [String: String]) throws -> String {
        let value = variables[name]
        let present = operation.hasPrefix(":") ? !(value ?? "").isEmpty : value != nil
        if present { return value ?? "" }
        if hasDefault { return word }
        if isRequired { throw DeploymentFailure("required variable \(name) is missing a value: \(word)") }
        return ""
    }
}

extension ComposeFile {
    /// Compose's interpolation of `${NAME}`, `${NAME-default}`, `${NAME:-default}`,
    /// `${NAME?message}`, `${NAME:?message}` and `$$`. A required variable that is missing (or
    /// empty, for `:?`) throws, as `docker compose` refuses to start. An unbraced `$NAME` is
    /// refused: the compose file does not use it.
    static func interpolate(_ text: String, _ variables: [String: String]) throws -> String {
        var output = ""
        for piece in try pieces(of: text) {
            switch piece {
            case .literal(let literal): output += literal
            case .reference(let reference): output += try reference.resolve(variables)
            }
        }
        return output
    }

    /// Every `${…}` in `text`.
    static func references(in text: String) throws -> [ComposeReference] {
        var references: [ComposeReference] = []
        for case .reference(let reference) in try pieces(of: text) {
            references.append(reference)
        }
        return references
    }

    private enum Piece {
        case literal(String)
        case reference(ComposeReference)
    }

    private static func pieces(of text: String) throws -> [Piece] {
        var pieces: [Piece] = []
        var rest = Substring(text)
        while let dollar = rest.firstIndex(of: "$") {
            pieces.append(.literal(String(rest[..<dollar])))
            rest = rest[rest.index(after: dollar)...]
            if rest.first == "$" {
                pieces.append(.literal("$"))
                rest = rest.dropFirst()
                continue
            }
            guard rest.first == "{", let close = rest.firstIndex(of: "}") else {
                throw DeploymentFailure("unsupported interpolation in '\(text)' (only ${NAME…} and $$)")
            }
            pieces.append(.reference(try ComposeReference(parsing: rest[rest.index(after: rest.startIndex)..<close])))
            rest = rest[rest.index(after: close)...]
        }
        pieces.append(.literal(String(rest)))
        return pieces
    }
}

/// The permission bits of a file (`0o600`), or nil when it cannot be read.
func permissionBits(of url: URL) -> Int? {
    guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path) else { return nil }
    let value = attributes[.posixPermissions]
    if let number = value as? NSNumber { return number.intValue & 0o777 }
    if let number = value as? Int { return number & 0o777 }
    return nil
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
    let directory = try TemporaryDirectory(prefix: "estuary-deploy")
    let process = try ChildProcess.launch(
        executable, arguments, name: "run", directory: directory.url,
        workingDirectory: Deployment.repositoryRoot, environment: extra, mergingErrors: true
    )
    var termination = await process.waitForExit(timeout: timeout)
    let timedOut = termination == nil
    if timedOut {
        termination = await process.stop(grace: .seconds(5))
    }
    let status: Int32 = switch termination {
    case .exited(let code): code
    case .signalled(let signal): 128 + signal
    case nil: -1
    }
    return ProcessRun(status: status, output: process.stdoutText, timedOut: timedOut)
}
