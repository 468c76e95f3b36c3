import NIOCore
import NIOPosix
import Testing

@testable import Edge

struct ConnectionFailureTests {
    @Test("A refused connection reads as one line with the address, not NIO's nested dump")
    func refused() async throws {
        // A port nothing listens on: bind one, note it, close it.
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(server.localAddress?.port)
        try await server.close()
        do {
            _ = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port).get()
            Issue.record("connected to a closed port")
        } catch {
            let line = ConnectionFailure.describe(error)
            #expect(line == "connection refused (127.0.0.1:\(port))", "\(line) (from \(error))")
        }
    }
}
