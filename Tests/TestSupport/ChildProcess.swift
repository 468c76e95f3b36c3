import Foundation
import Subprocess
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How a child process ended.
public enum Termination: Equatable, Sendable, CustomStringConvertible {
    case exited(Int32)
    case signalled(Int32)

    public var description: String {
        switch self {
        case .exited(let code): return "exit \(code)"
        case .signalled(let signal): return "signal \(signal)"
        }
    }
}

/// A child process of a test or benchmark (ffmpeg, ffprobe, curl, rtmpdump, nats-server, the
/// node itself), started by swift-subprocess, with its stdout and stderr in files (a pipe
/// nobody reads could fill and block the child).
///
/// swift-subprocess runs a process inside an `async` call that returns when it ends; tests
/// keep servers and players running across many steps, so that call runs in a task of its
/// own, and this object is its handle: the process's id once spawned, signals (one sent
/// before the spawn is delivered right after it), and how it ended. Nothing here blocks a
/// thread: waits poll, each bounded by its timeout.
public final class ChildProcess: Sendable {
    public let name: String
    public let stdoutURL: URL
    public let stderrURL: URL

    private enum Phase: Sendable {
        case starting(pendingSignals: [Int32])
        case running(pid: pid_t)
        case ended(Termination, pid: pid_t?)
    }

    private let phase: Mutex<Phase>

    private init(name: String, stdoutURL: URL, stderrURL: URL) {
        self.name = name
        self.stdoutURL = stdoutURL
        self.stderrURL = stderrURL
        phase = Mutex(.starting(pendingSignals: []))
    }

    /// Starts `executable` with `arguments`; output goes to `<directory>/<name>.stdout` and
    /// `.stderr` (with `mergingErrors`, both to `.stdout`). The environment is this process's
    /// with `environment` over it.
    public static func launch(
        _ executable: URL,
        _ arguments: [String],
        name: String,
        directory: URL,
        workingDirectory: URL? = nil,
        environment: [String: String] = [:],
        mergingErrors: Bool = false
    ) throws -> ChildProcess {
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            throw TestFailure("cannot start \(executable.path): not an executable file")
        }
        let child = ChildProcess(
            name: name,
            stdoutURL: directory.appendingPathComponent("\(name).stdout"),
            stderrURL: directory.appendingPathComponent(mergingErrors ? "\(name).stdout" : "\(name).stderr")
        )
        let options: FileDescriptor.OpenOptions = [.create, .truncate]
        let out = try FileDescriptor.open(FilePath(child.stdoutURL.path), .writeOnly, options: options, permissions: .init(rawValue: 0o644))
        let err: FileDescriptor
        do {
            err = mergingErrors ? out : try FileDescriptor.open(FilePath(child.stderrURL.path), .writeOnly, options: options, permissions: .init(rawValue: 0o644))
        } catch {
            try? out.close()
            throw error
        }
        var overrides: [Environment.Key: String?] = [:]
        for (key, value) in environment {
            guard let key = Environment.Key(rawValue: key) else { throw TestFailure("\(key) is no environment variable name") }
            overrides[key] = value
        }
        let configuration = Configuration(
            executable: .path(FilePath(executable.path)),
            arguments: Arguments(arguments),
            environment: .inherit.updating(overrides),
            workingDirectory: workingDirectory.map { FilePath($0.path) }
        )
        Task.detached {
            let termination: Termination
            do {
                // The descriptors are the child's now; this process closes its copies once
                // the child is spawned.
                let result = try await Subprocess.run(
                    configuration,
                    input: .none,
                    output: .fileDescriptor(out, closeAfterSpawningProcess: false),
                    error: .fileDescriptor(err, closeAfterSpawningProcess: false)
                ) { execution in
                    try? out.close()
                    if !mergingErrors { try? err.close() }
                    child.spawned(execution.processIdentifier.value)
                }
                switch result.terminationStatus {
                case .exited(let code): termination = .exited(code)
                case .signaled(let signal): termination = .signalled(signal)
                }
            } catch {
                try? out.close()
                if !mergingErrors { try? err.close() }
                if let text = "cannot start \(executable.path): \(error)\n".data(using: .utf8),
                   let handle = try? FileHandle(forWritingTo: child.stderrURL) {
                    _ = try? handle.seekToEnd()
                    try? handle.write(contentsOf: text)
                    try? handle.close()
                }
                termination = .exited(127)
            }
            child.ended(termination)
        }
        return child
    }

    private func spawned(_ pid: pid_t) {
        let pending: [Int32] = phase.withLock { phase in
            guard case .starting(let signals) = phase else { return [] }
            phase = .running(pid: pid)
            return signals
        }
        for signal in pending { kill(pid, signal) }
    }

    private func ended(_ termination: Termination) {
        phase.withLock { phase in
            switch phase {
            case .running(let pid): phase = .ended(termination, pid: pid)
            default: phase = .ended(termination, pid: nil)
            }
        }
    }

    /// The process id: 0 until the spawn (a few milliseconds after `launch`).
    public var pid: Int32 {
        phase.withLock { phase in
            switch phase {
            case .starting: return 0
            case .running(let pid): return pid
            case .ended(_, let pid): return pid ?? 0
            }
        }
    }

    public var isRunning: Bool { termination == nil }

    /// The termination, or nil while the process runs (or is being spawned).
    public var termination: Termination? {
        phase.withLock { phase in
            if case .ended(let termination, _) = phase { return termination }
            return nil
        }
    }

    /// Sends a signal (SIGSTOP, SIGCONT, SIGTERM, SIGKILL…) if the process still runs; before
    /// the spawn, right after it.
    public func send(signal: Int32) {
        let pid: pid_t? = phase.withLock { phase in
            switch phase {
            case .starting(let signals):
                phase = .starting(pendingSignals: signals + [signal])
                return nil
            case .running(let pid): return pid
            case .ended: return nil
            }
        }
        if let pid { kill(pid, signal) }
    }

    /// Waits up to `timeout` for the process to end; nil if it still runs.
    @discardableResult
    public func waitForExit(timeout: Duration) async -> Termination? {
        let deadline = ContinuousClock.now + timeout
        while termination == nil, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return termination
    }

    /// SIGKILL, then wait for the process to be reaped.
    public func killNow() async {
        send(signal: SIGCONT)
        send(signal: SIGKILL)
        await waitForExit(timeout: .seconds(5))
    }

    /// `signal` (SIGTERM by default); SIGKILL after `grace`. Returns how it ended.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, grace: Duration = .seconds(3)) async -> Termination? {
        guard isRunning else { return termination }
        send(signal: SIGCONT)
        send(signal: signal)
        if let termination = await waitForExit(timeout: grace) {
            return termination
        }
        send(signal: SIGKILL)
        return await waitForExit(timeout: .seconds(5))
    }

    public var stdoutText: String {
        (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? ""
    }

    public var stderrText: String {
        (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? ""
    }

    public var stdoutData: Data {
        (try? Data(contentsOf: stdoutURL)) ?? Data()
    }
}
