import Foundation
import TestSupport

/// A real `nats-server` on a free loopback port, started and stopped by a test.
final class NATSServer {
    let port: Int
    let arguments: [String]
    private let directory: TemporaryDirectory
    private var process: BackgroundProcess?

    var url: String { "nats://127.0.0.1:\(port)" }

    /// nats-server from PATH, or Debian's /usr/sbin (not in every PATH).
    static var executable: String? {
        Tool.locate("nats-server") ?? (FileManager.default.isExecutableFile(atPath: "/usr/sbin/nats-server") ? "/usr/sbin/nats-server" : nil)
    }

    static var isAvailable: Bool { executable != nil }

    /// Starts the server and waits (up to 10 s) until it accepts connections.
    /// - Parameter extraArguments: e.g. `["--auth", token]`.
    /// - Parameter port: a free port by default.
    init(port: Int? = nil, extraArguments: [String] = []) async throws {
        directory = try TemporaryDirectory(prefix: "estuary-nats")
        self.port = try port ?? LoopbackPort.free()
        arguments = ["-a", "127.0.0.1", "-p", String(self.port)] + extraArguments
        try await start()
    }

    func start() async throws {
        guard let executable = Self.executable else { throw TestFailure("nats-server not found") }
        let process = try BackgroundProcess(executable, arguments, in: directory.url)
        self.process = process
        guard await LoopbackPort.waitUntilListening(port, timeout: .seconds(10)) else {
            await process.stop(signal: SIGKILL)
            throw TestFailure("nats-server did not listen on \(port): \(process.stderr)")
        }
    }

    /// Stops the server (SIGTERM, SIGKILL after 5 s).
    func stop() async {
        await process?.stop()
        process = nil
    }
}
