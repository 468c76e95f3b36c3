import Foundation

/// The librtmp test publisher (`Tests/Peers/librtmp-publisher.c`), compiled once per test
/// process with the system C compiler against Debian's librtmp: it sends packets the way the
/// mobile SDKs built on librtmp do (RTMP_SendPacket with the header size chosen per packet).
actor LibRTMPPublisher {
    static let shared = LibRTMPPublisher()

    private var build: Task<URL, any Error>?

    /// The compiled program.
    func executable() async throws -> URL {
        if let build = self.build { return try await build.value }
        let task = Task { try await Self.compile() }
        self.build = task
        return try await task.value
    }

    private static func compile() async throws -> URL {
        guard let root = TestEnvironment.repositoryRoot else { throw IntegrationFailure("no Package.swift above \(#filePath)") }
        let source = root.appendingPathComponent("Tests/Peers/librtmp-publisher.c")
        let directory = try TestEnvironment.makeTemporaryDirectory("librtmp-publisher")
        let output = directory.appendingPathComponent("librtmp-publisher")
        let compiler = try ["cc", "clang", "gcc"].lazy.compactMap { try? TestEnvironment.tool($0) }.first
            ?? { throw IntegrationFailure("no C compiler (cc, clang or gcc) on PATH") }()
        let run = try await ChildProcess.run(
            compiler,
            ["-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-O1", "-o", output.path, source.path, "-lrtmp"],
            name: "cc-librtmp-publisher",
            directory: directory,
            timeout: .seconds(60)
        )
        guard run.succeeded else {
            throw IntegrationFailure("compiling the librtmp publisher failed (Debian: librtmp-dev): \(run)")
        }
        return output
    }
}
