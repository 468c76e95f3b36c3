import Foundation
import TestSupport
import NIOCore
import RTMP
import Testing

extension IntegrationTests {
    /// What the node keeps for a peer that does not read: its replies are bounded in bytes,
    /// and a last answer waits for the peer only so long. Each test has a node of its own,
    /// with the write-stall timeout long enough that the bound under test acts first.
    @Suite("Output bounds")
    struct OutputBoundTests {
        /// Ping requests (user control 6) on chunk stream 2: the first with a full header,
        /// the rest as 7-byte type 3 chunks. Each asks for an 18-byte ping response.
        static func pings(_ count: Int) -> [UInt8] {
            var bytes: [UInt8] = [0x02, 0, 0, 0, 0, 0, 6, 0x04, 0, 0, 0, 0, 0x00, 0x06, 0, 0, 0, 1]
            bytes.reserveCapacity(18 + 7 * count)
            for index in 1..<max(count, 1) {
                bytes += [0xC2, 0x00, 0x06, 0, 0, UInt8(truncatingIfNeeded: index >> 8), UInt8(truncatingIfNeeded: index)]
            }
            return bytes
        }

        @Test("A peer that sends pings and never reads the answers is closed at 4 MiB of queued replies (outbound_backlog); memory stays bounded")
        func unreadRepliesAreBoundedInBytes() async throws {
            try await Scenario.run("outbound-backlog") { scenario in
                var config = NodeConfig()
                config.writeStallTimeoutSeconds = 60
                let node = try await scenario.startNode(config)
                let peakBefore = ProcessMemory.peakResidentKiB(pid: node.process.pid)
                let client = try await RTMPRawClient.connect(port: node.rtmpPort, smallReceiveBuffer: true)
                scenario.track(client.connection)
                try await client.plainHandshake()
                try await client.connect(app: "live")
                await client.connection.stopReading()
                // 1.5 M pings (10.5 MB) ask for 27 MB of answers; the node gives up at 4 MiB
                // queued, long before they are all sent.
                let burst = Self.pings(50_000)
                var sent = 0
                for _ in 0..<30 {
                    guard await client.sendRaw(burst) else { break }
                    sent += 1
                }
                let closed = await eventually(timeout: .seconds(20), interval: .milliseconds(200)) {
                    (try? await node.closedConnections(reason: "outbound_backlog")) ?? 0 >= 1
                }
                scenario.check(closed, "the node did not close a peer that never reads its ping answers (\(sent) bursts of 50,000 pings sent)")
                await client.connection.resumeReading()
                scenario.check(await client.connection.waitForClose(timeout: .seconds(5)), "the connection stayed open after outbound_backlog was counted")
                let health = try await HTTPClient.get(port: node.httpPort, path: "/healthz")
                scenario.check(health.status == 200, "/healthz answered \(health.status) after the backlog close")
                if let peakBefore, let peakAfter = ProcessMemory.peakResidentKiB(pid: node.process.pid) {
                    // 4 MiB of replies in one buffer, plus the read buffers: nowhere near the 27 MB asked for.
                    scenario.check(peakAfter - peakBefore < 24 * 1024, "peak RSS grew \(peakAfter - peakBefore) KiB for one peer that does not read")
                    scenario.note("peak RSS \(peakBefore) -> \(peakAfter) KiB; \(sent) bursts sent before the close")
                }
            }
        }

        @Test("A closing answer to a peer that does not read is given up after 5 s (close_flush): the socket does not stay open for ever")
        func theLastAnswerWaitsOnlySoLong() async throws {
            try await Scenario.run("close-flush-cap") { scenario in
                var config = NodeConfig()
                config.writeStallTimeoutSeconds = 60
                config.sessionStartTimeoutSeconds = 2
                let node = try await scenario.startNode(config)
                let client = try await RTMPRawClient.connect(port: node.rtmpPort, smallReceiveBuffer: true)
                scenario.track(client.connection)
                try await client.plainHandshake()
                try await client.connect(app: "live")
                await client.connection.stopReading()
                // Fill the socket and the node's queue with about 2.5 MB of ping answers, under
                // the 4 MiB bound: the IdleTimeOut status after it cannot be flushed.
                _ = await client.sendRaw(Self.pings(140_000))
                let start = ContinuousClock.now
                let counted = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) {
                    (try? await node.closedConnections(reason: "session_start_timeout")) ?? 0 >= 1
                }
                scenario.check(counted, "the session-start timeout did not fire")
                scenario.check((try await node.closedConnections(reason: "outbound_backlog")) == 0, "the pings alone crossed the outbound bound; the test no longer tests the flush cap")
                // Timed out at 2 s; the flush is abandoned 5 s later. Checked from the server's
                // side: the socket is gone from its connection count.
                let gone = await eventually(timeout: .seconds(15), interval: .milliseconds(250)) {
                    ((try? await node.metrics().sum("estuary_rtmp_connections_open", labels: [:])) ?? 1) == 0
                }
                let elapsed = ContinuousClock.now - start
                scenario.check(gone, "the node still held the connection \(elapsed) after its session-start timeout")
                scenario.check(elapsed >= .seconds(5), "the connection closed after \(elapsed): before the 5 s flush cap, so the answer was not waited for")
                await client.connection.resumeReading()
                scenario.check(await client.connection.waitForClose(timeout: .seconds(5)), "the client never saw the close")
            }
        }
    }
}
