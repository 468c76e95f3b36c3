import Foundation
import Testing

extension IntegrationTests {
    /// Issue 25, item 6: a peer cannot flood the log by reconnecting in a loop.
    @Suite("Log flood")
    struct LogFloodTests {
        @Test("60 connections from one address with a malformed handshake write at most 20 connection lines in 10 s; the rest are counted (estuary_log_lines_held_back_total), and the next line after the window says how many were held back")
        func repeatedLinesAreHeldBackAndCounted() async throws {
            try await Scenario.run("log-flood") { scenario in
                // Loopback is exempt unless limited, as from the per-address connection limit.
                var config = NodeConfig()
                config.limitLoopbackConnections = true
                let node = try await scenario.startNode(config, label: "node")
                func badHandshake() async throws {
                    let connection = try await RawConnection.connect(port: node.rtmpPort)
                    scenario.track(connection)
                    try await connection.send([0x42] + (0..<1536).map { _ in UInt8.random(in: 0...255) })
                    _ = await connection.waitForClose(timeout: .seconds(5))
                }
                let started = ContinuousClock.now
                for _ in 0..<60 { try await badHandshake() }
                try scenario.require(ContinuousClock.now - started < .seconds(9), "the 60 connections took over 9 s: the window would have rolled over")
                try await Task.sleep(for: .milliseconds(300))
                let lines = node.log.split(separator: "\n").filter { $0.contains("conn=127.0.0.1:") }
                scenario.check((1...20).contains(lines.count), "\(lines.count) connection lines for 60 bad handshakes from one address, expected 1…20")
                let heldBack = try await node.metrics().sum("estuary_log_lines_held_back_total", labels: ["source": "rtmp"])
                scenario.check(heldBack >= 40, "only \(heldBack) connection lines were counted as held back")
                // After the window, the next line says how many were held back.
                try await Task.sleep(for: .seconds(10))
                try await badHandshake()
                let said = await eventually(timeout: .seconds(3), interval: .milliseconds(100)) { node.log.contains("linesHeldBack=") }
                scenario.check(said, "no line after the window says how many were held back")
            }
        }
    }
}
