import Foundation
import TestSupport

// Child processes (ffmpeg, ffprobe, curl, rtmpdump, schemathesis, the node) are started by
// swift-subprocess through TestSupport's `ChildProcess`, their output in the scenario's
// directory.
typealias ChildProcess = TestSupport.ChildProcess
typealias Termination = TestSupport.Termination

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

extension ChildProcess {
    /// Runs a tool to completion, killing it after `timeout`.
    static func run(
        _ executable: URL,
        _ arguments: [String],
        name: String,
        directory: URL,
        timeout: Duration
    ) async throws -> ToolRun {
        let start = ContinuousClock.now
        let process = try ChildProcess.launch(executable, arguments, name: name, directory: directory)
        return await process.finish(timeout: timeout, startedAt: start)
    }

    /// Waits for the process to end by itself within `timeout` (killing it otherwise) and collects its output.
    func finish(timeout: Duration, startedAt start: ContinuousClock.Instant = .now) async -> ToolRun {
        let termination = await self.waitForExit(timeout: timeout)
        if termination == nil {
            await self.killNow()
        }
        return ToolRun(name: self.name, termination: termination, stdout: self.stdoutText, stderr: self.stderrText, elapsed: ContinuousClock.now - start)
    }
}
