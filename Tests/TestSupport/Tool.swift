import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A test failure with a message (setup problems, unexpected tool output).
public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) {
        self.description = description
    }
}

/// The result of one bounded run of a command-line tool.
public struct ToolResult: CustomStringConvertible {
    public var command: String
    /// nil when the run was killed at its timeout.
    public var exitStatus: Int32?
    public var stdout: Data
    public var stderr: String

    public var succeeded: Bool { exitStatus == 0 }
    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }

    public var description: String {
        "\(command): \(exitStatus.map { "exit \($0)" } ?? "timed out")\n\(stderr.suffix(2000))"
    }
}

/// Runs ffmpeg / ffprobe, found through PATH, with every run bounded by a timeout.
public enum Tool {
    /// The absolute path of `name` in PATH (`name` itself when it is a path), or nil.
    public static func locate(_ name: String) -> String? {
        if name.contains("/") {
            return FileManager.default.isExecutableFile(atPath: name) ? name : nil
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) {
                return candidate
            }
        }
        return nil
    }

    /// The project's Python: `<repo>/.venv/bin/python3`, the virtualenv that
    /// scripts/install-deps.sh makes (with `cryptography` and Playwright), or `python3` from
    /// PATH when there is none.
    public static var python3: String {
        var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while directory.path != "/" {
            if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
                let venv = directory.appendingPathComponent(".venv/bin/python3").path
                return FileManager.default.isExecutableFile(atPath: venv) ? venv : "python3"
            }
            directory = directory.deletingLastPathComponent()
        }
        return "python3"
    }

    /// Runs `name arguments…` (`name` found through PATH, or a path); its output goes to files
    /// in `directory` (a pipe could fill and block the child). Killed with SIGKILL after `timeout`.
    public static func run(
        _ name: String,
        _ arguments: [String],
        in directory: URL,
        timeout: Duration = .seconds(60)
    ) async throws -> ToolResult {
        guard let executable = locate(name) else {
            throw TestFailure("\(name) not found in PATH")
        }
        let tag = "\(URL(fileURLWithPath: name).lastPathComponent)-\(UUID().uuidString.prefix(8))"
        let process = try ChildProcess.launch(
            URL(fileURLWithPath: executable), arguments, name: tag, directory: directory, workingDirectory: directory
        )
        var exitStatus: Int32?
        switch await process.waitForExit(timeout: timeout) {
        case .exited(let code): exitStatus = code
        case .signalled(let signal): exitStatus = -signal
        case nil: await process.killNow()
        }
        return ToolResult(
            command: ([name] + arguments).joined(separator: " "),
            exitStatus: exitStatus,
            stdout: process.stdoutData,
            stderr: process.stderrText
        )
    }
}

/// A temporary directory removed when the value is released.
public final class TemporaryDirectory {
    public let url: URL

    /// - Parameter prefix: names the directory after the suite, for a look after a failure.
    public init(prefix: String = "estuary-tests") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        // ESTUARY_TESTS_KEEP=1 keeps the files for a look after a failure.
        if ProcessInfo.processInfo.environment["ESTUARY_TESTS_KEEP"] == nil {
            try? FileManager.default.removeItem(at: url)
        }
    }

    public func file(_ name: String) -> URL {
        url.appendingPathComponent(name)
    }
}
