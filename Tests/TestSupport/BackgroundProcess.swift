import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A long-running child process (a server a test talks to), whose output goes to files in
/// a directory. `stop()` (or releasing it) kills it; every wait is bounded.
public final class BackgroundProcess: Sendable {
    public let command: String
    private let child: ChildProcess

    /// Starts `executable arguments…` (an absolute path, or a name found through PATH).
    public init(_ executable: String, _ arguments: [String], in directory: URL) throws {
        guard let path = executable.hasPrefix("/") ? executable : Tool.locate(executable) else {
            throw TestFailure("\(executable) not found in PATH")
        }
        let name = URL(fileURLWithPath: path).lastPathComponent
        command = ([name] + arguments).joined(separator: " ")
        child = try ChildProcess.launch(
            URL(fileURLWithPath: path), arguments, name: "\(name)-\(UUID().uuidString.prefix(8))",
            directory: directory, workingDirectory: directory
        )
    }

    public var stdoutURL: URL { child.stdoutURL }
    public var stderrURL: URL { child.stderrURL }

    public var isRunning: Bool { child.isRunning }

    public var processIdentifier: Int32 { child.pid }

    /// What the process wrote to stderr so far (for failure messages).
    public var stderr: String { child.stderrText }

    /// Sends `signal` and waits up to `timeout` for the exit; SIGKILL after that.
    public func stop(signal: Int32 = SIGTERM, timeout: Duration = .seconds(5)) async {
        await child.stop(signal: signal, grace: timeout)
    }

    deinit {
        child.send(signal: SIGKILL)
    }
}

/// TCP ports on 127.0.0.1 for servers started by tests.
public enum LoopbackPort {
    /// A port that was free a moment ago: the kernel's pick for a socket bound to port 0.
    /// (Another process could take it before the server binds it; on a test machine that
    /// race is rare enough.)
    public static func free() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestFailure("socket() failed: errno \(errno)") }
        defer { close(descriptor) }
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw TestFailure("bind() failed: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getsockname(descriptor, $0, &length)
            }
        }
        guard named == 0 else { throw TestFailure("getsockname() failed: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// True when something accepts TCP connections on 127.0.0.1:`port`.
    public static func isListening(_ port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = loopback(port: port)
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return result == 0
    }

    /// Polls until `port` accepts connections; false after `timeout`.
    public static func waitUntilListening(_ port: Int, timeout: Duration = .seconds(10)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if isListening(port) { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return isListening(port)
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }
}
