import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How a child process ended.
enum Termination: Equatable, CustomStringConvertible {
    case exited(Int32)
    case signalled(Int32)

    var description: String {
        switch self {
        case .exited(let code): return "exit \(code)"
        case .signalled(let signal): return "signal \(signal)"
        }
    }
}

/// A child process (ffmpeg, ffprobe, curl, rtmpdump, node) whose stdout and stderr go to files.
///
/// `Process` is thread-safe for what is used here (launch, pid, isRunning, termination status),
/// hence `@unchecked Sendable`.
final class Subprocess: @unchecked Sendable {
    let name: String
    let process: Process
    let stdoutURL: URL
    let stderrURL: URL
    private let handles: [FileHandle]

    private init(name: String, process: Process, stdoutURL: URL, stderrURL: URL, handles: [FileHandle]) {
        self.name = name
        self.process = process
        self.stdoutURL = stdoutURL
        self.stderrURL = stderrURL
        self.handles = handles
    }

    deinit {
        for handle in self.handles {
            try? handle.close()
        }
    }

    /// Starts `executable` with `arguments`; output goes to `<directory>/<name>.stdout|.stderr`.
    static func launch(
        _ executable: URL,
        _ arguments: [String],
        name: String,
        directory: URL
    ) throws -> Subprocess {
        let stdoutURL = directory.appendingPathComponent("\(name).stdout")
        let stderrURL = directory.appendingPathComponent("\(name).stderr")
        guard
            FileManager.default.createFile(atPath: stdoutURL.path, contents: nil),
            FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        else {
            throw IntegrationFailure("cannot create output files for \(name) in \(directory.path)")
        }
        let stdoutHandle = try FileHandle(forWritingTo: stdoutURL)
        let stderrHandle = try FileHandle(forWritingTo: stderrURL)
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = stdoutHandle
        process.standardError = stderrHandle
        do {
            try process.run()
        } catch {
            try? stdoutHandle.close()
            try? stderrHandle.close()
            throw IntegrationFailure("cannot start \(executable.path): \(error)")
        }
        return Subprocess(
            name: name,
            process: process,
            stdoutURL: stdoutURL,
            stderrURL: stderrURL,
            handles: [stdoutHandle, stderrHandle]
        )
    }

    var pid: Int32 { self.process.processIdentifier }

    var isRunning: Bool { self.process.isRunning }

    /// The termination, or nil while the process runs.
    var termination: Termination? {
        guard !self.process.isRunning else { return nil }
        switch self.process.terminationReason {
        case .exit: return .exited(self.process.terminationStatus)
        case .uncaughtSignal: return .signalled(self.process.terminationStatus)
        @unknown default: return .exited(self.process.terminationStatus)
        }
    }

    /// Waits up to `timeout` for the process to end; nil if it still runs.
    @discardableResult
    func waitForExit(timeout: Duration) async -> Termination? {
        _ = await eventually(timeout: timeout, interval: .milliseconds(25)) { !self.process.isRunning }
        return self.termination
    }

    /// Sends a signal (SIGSTOP, SIGCONT, SIGTERM, SIGKILL...) if the process still runs.
    func send(signal: Int32) {
        guard self.process.isRunning else { return }
        _ = kill(self.pid, signal)
    }

    /// SIGKILL, then wait for the process to be reaped.
    func killNow() async {
        self.send(signal: SIGCONT)
        self.send(signal: SIGKILL)
        await self.waitForExit(timeout: .seconds(5))
    }

    /// SIGTERM; SIGKILL after `grace`. Returns how it ended.
    @discardableResult
    func stop(grace: Duration = .seconds(3)) async -> Termination? {
        guard self.process.isRunning else { return self.termination }
        self.send(signal: SIGCONT)
        self.send(signal: SIGTERM)
        if let termination = await self.waitForExit(timeout: grace) {
            return termination
        }
        self.send(signal: SIGKILL)
        return await self.waitForExit(timeout: .seconds(5))
    }

    var stdoutText: String {
        (try? String(contentsOf: self.stdoutURL, encoding: .utf8)) ?? ""
    }

    var stderrText: String {
        (try? String(contentsOf: self.stderrURL, encoding: .utf8)) ?? ""
    }

    var stdoutData: Data {
        (try? Data(contentsOf: self.stdoutURL)) ?? Data()
    }
}

/// The result of a bounded run of a tool.
struct ToolRun: CustomStringConvertible {
    let name: String
    let termination: Termination?
    let stdout: String
    let stderr: String
    let elapsed: Duration

    var timedOut: Bool { self.termination == nil }
    var succeeded: Bool { self.termination == .exited(0) }

    var description: String {
        let status = self.termination.map(\.description) ?? "timed out"
        return "\(self.name): \(status) after \(String(format: "%.2f", self.elapsed.inSeconds)) s; stderr:\n\(tail(self.stderr, lines: 15))"
    }
}

extension Subprocess {
    /// Runs a tool to completion, killing it after `timeout`.
    static func run(
        _ executable: URL,
        _ arguments: [String],
        name: String,
        directory: URL,
        timeout: Duration
    ) async throws -> ToolRun {
        let start = ContinuousClock.now
        let process = try Subprocess.launch(executable, arguments, name: name, directory: directory)
        return await process.finish(timeout: timeout, startedAt: start)
    }

    /// Waits for the process to end by itself within `timeout` (killing it otherwise) and collects its output.
    func finish(timeout: Duration, startedAt start: ContinuousClock.Instant = .now) async -> ToolRun {
        let termination = await self.waitForExit(timeout: timeout)
        if termination == nil {
            await self.killNow()
        }
        return self.result(termination: termination, elapsed: ContinuousClock.now - start)
    }

    private func result(termination: Termination?, elapsed: Duration) -> ToolRun {
        ToolRun(name: self.name, termination: termination, stdout: self.stdoutText, stderr: self.stderrText, elapsed: elapsed)
    }
}
