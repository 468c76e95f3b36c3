import Foundation

/// An error that ends an integration test with a readable reason.
struct IntegrationFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

/// Where the repository, the `estuary` binary and the external tools are.
enum TestEnvironment {
    /// The package root: the nearest directory above this file that holds Package.swift.
    static let repositoryRoot: URL? = {
        var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while directory.path != "/" {
            if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
                return directory
            }
            directory = directory.deletingLastPathComponent()
        }
        return nil
    }()

    /// The server binary: `ESTUARY_NODE`, or `<repo>/.build/debug/estuary`.
    static func nodeBinary() throws -> URL {
        if let override = ProcessInfo.processInfo.environment["ESTUARY_NODE"], !override.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: override) else {
                throw IntegrationFailure("ESTUARY_NODE=\(override) is not an executable file")
            }
            return URL(fileURLWithPath: override)
        }
        guard let root = repositoryRoot else {
            throw IntegrationFailure("no Package.swift above \(#filePath); set ESTUARY_NODE")
        }
        let candidate = root.appendingPathComponent(".build/debug/estuary")
        guard FileManager.default.isExecutableFile(atPath: candidate.path) else {
            throw IntegrationFailure("\(candidate.path) does not exist: run `swift build` first or set ESTUARY_NODE")
        }
        return candidate
    }

    /// An executable found on PATH (ffmpeg, ffprobe, rtmpdump, curl), or in the system
    /// directories a non-root PATH leaves out (`ip`).
    static func tool(_ name: String) throws -> URL {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin") + ":/usr/sbin:/sbin"
        for directory in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) {
                return candidate
            }
        }
        throw IntegrationFailure("\(name) is not on PATH; install it (Debian: ffmpeg, rtmpdump, curl)")
    }

    /// The project's Python: `<repo>/.venv/bin/python3`, the virtualenv that
    /// scripts/install-deps.sh makes (with Playwright), or `python3` on PATH when there is none.
    static func python3() throws -> URL {
        if let root = repositoryRoot {
            let venv = root.appendingPathComponent(".venv/bin/python3")
            if FileManager.default.isExecutableFile(atPath: venv.path) {
                return venv
            }
        }
        return try tool("python3")
    }

    /// A new empty directory under the system temporary directory.
    static func makeTemporaryDirectory(_ label: String) throws -> URL {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("estuary-it-\(label)-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }
}

/// Polls `condition` every `interval` until it holds or `timeout` passes; returns whether it held.
@discardableResult
func eventually(
    timeout: Duration,
    interval: Duration = .milliseconds(20),
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: interval)
    }
}

extension Duration {
    /// The duration in seconds as a Double, for messages.
    var inSeconds: Double {
        let (seconds, attoseconds) = self.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// The last `count` lines of a text.
func tail(_ text: String, lines count: Int) -> String {
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    return lines.suffix(count).joined(separator: "\n")
}

/// The size of a file in bytes (0 when it does not exist).
func fileSize(_ url: URL) -> Int {
    guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path) else { return 0 }
    if let number = attributes[.size] as? NSNumber { return number.intValue }
    if let value = attributes[.size] as? UInt64 { return Int(value) }
    if let value = attributes[.size] as? Int { return value }
    return 0
}

/// The longest wall-clock wait between increases of `count()` while sampling it every
/// `interval` for `duration` (the wait still open at the end included): what a viewer
/// saw of a stall, from the frames it had received.
func longestWait(
    for duration: Duration, every interval: Duration, from initial: Int, _ count: () throws -> Int
) async throws -> Duration {
    let start = ContinuousClock.now
    var last = initial
    var lastChange = start
    var longest = Duration.zero
    while ContinuousClock.now - start < duration {
        try await Task.sleep(for: interval)
        let current = try count()
        let now = ContinuousClock.now
        if current > last {
            longest = max(longest, now - lastChange)
            (last, lastChange) = (current, now)
        }
    }
    return max(longest, ContinuousClock.now - lastChange)
}
