import Foundation
import TestSupport
import NIOCore
import RTMP
import Testing

extension IntegrationTests {
    /// Issue 27: a handful of connections holding unfinished messages used to exhaust the
    /// node's reassembly budget, and the next publisher to ask was closed. Now the holders
    /// pay: the costliest are shed as the budget runs short, and a message whose bytes stop
    /// coming closes its connection.
    @Suite("The node's reassembly budget under attack")
    struct ReassemblyBudgetAttackTests {
        static let budget = 48 * 1024 * 1024

        /// A publisher of a stream of its own, with chunks of 64 KiB.
        static func holdingPublisher(_ scenario: Scenario, node: NodeProcess, index: Int) async throws -> RTMPRawClient {
            let (client, code) = try await RTMPRawClient.publishing(scenario, port: node.rtmpPort, app: "live", name: "hold-\(index)")
            try scenario.require(code == "NetStream.Publish.Start", "attacker \(index)'s publish answered \(code)")
            try await client.setChunkSize(65_536)
            return client
        }

        /// Sends `bytes` of an 8 MiB video message (8 MiB of storage once past 4 MiB) and
        /// keeps it unfinished.
        static func hold(_ bytes: Int, client: RTMPRawClient) async {
            var message: [UInt8] = [0x06] + Self.header0(length: 8 * 1024 * 1024, type: 9, streamID: 1)
            var sent = 0
            while sent < bytes {
                if sent > 0 { message.append(0xC6) }
                let piece = min(65_536, bytes - sent)
                message += [UInt8](repeating: 0x17, count: piece)
                sent += piece
            }
            // The next chunk's header and a byte of it: the trickle below continues that chunk.
            message += [0xC6, 0x17]
            _ = await client.sendRaw(message)
        }

        /// A chunk's type 0 message header: 3-byte timestamp 0, 3-byte length, type, little-endian stream id.
        static func header0(length: Int, type: UInt8, streamID: UInt32) -> [UInt8] {
            [0, 0, 0, UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF), type,
             UInt8(streamID & 0xFF), UInt8((streamID >> 8) & 0xFF), UInt8((streamID >> 16) & 0xFF), UInt8(streamID >> 24)]
        }

        @Test("Connections holding unfinished messages past the node's budget are shed or time out; a real publisher and its viewer go on with no gap over 500 ms")
        func holdersPayNotThePublisher() async throws {
            try await Scenario.run("reassembly-attack") { scenario in
                let node = try await scenario.startNode(
                    NodeConfig(publisherIdleTimeoutSeconds: 120, maxReassemblyBytes: Self.budget, hlsWindowSegments: 3), label: "node")
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let publisher = try scenario.publish(media, to: node.rtmpURL("live", "good"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(node, "live", "good", timeout: .seconds(15))
                let viewer = try await scenario.openViewer(node, "live", "good")
                try scenario.require(await viewer.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(10)), "the viewer got no media")
                // The baseline: HLS's window of three 2 s segments is full, the viewer's GOP went out.
                try await Task.sleep(for: .seconds(9))
                let closed = "estuary_rtmp_connections_closed_total"

                let start = viewer.receivedBytes
                async let longestGap = longestWait(for: .seconds(34), every: .milliseconds(50), from: start) { viewer.receivedBytes }

                // Before connect: four hold most of a 60 KB command and stop; two send a video
                // header of 8 MiB, which only a publisher may (refused at the header).
                var early: [RTMPRawClient] = []
                for index in 0..<6 {
                    let client = try await RTMPRawClient.connect(port: node.rtmpPort)
                    scenario.track(client.connection)
                    try await client.plainHandshake()
                    if index < 4 {
                        _ = await client.sendRaw([0x03] + Self.header0(length: 60_000, type: 20, streamID: 0) + [UInt8](repeating: 0x05, count: 128))
                    } else {
                        _ = await client.sendRaw([0x04] + Self.header0(length: 8 * 1024 * 1024, type: 9, streamID: 1) + [UInt8](repeating: 0x17, count: 128))
                    }
                    early.append(client)
                }

                // Ten publishers of streams of their own (each stream costs its hub and HLS
                // muxers, which the reassembly budget does not count: the memory baseline is
                // taken once they publish, with the peak reset) each hold 6 MiB of an
                // unfinished message (8 MiB of storage): 80 MiB against a 48 MiB budget.
                var holders: [RTMPRawClient] = []
                for index in 0..<10 {
                    holders.append(try await Self.holdingPublisher(scenario, node: node, index: index))
                }
                try await Task.sleep(for: .milliseconds(500))
                try? "5".write(toFile: "/proc/\(node.process.pid)/clear_refs", atomically: false, encoding: .utf8)
                let peakBefore = ProcessMemory.peakResidentKiB(pid: node.process.pid)
                scenario.note("resident before the messages: \(ProcessMemory.residentKiB(pid: node.process.pid) ?? 0) KiB, peak \(peakBefore ?? 0) KiB")
                for holder in holders {
                    await Self.hold(6 * 1024 * 1024, client: holder)
                }
                let rss = { ProcessMemory.residentKiB(pid: node.process.pid).map { "\($0 / 1024) MiB" } ?? "?" }
                scenario.note("resident after the holders filled: \(rss())")
                // They trickle a byte of their messages a second (each is progress, so the stall
                // timeout spares them) for 18 s; the budget must shed enough of them.
                for _ in 0..<18 {
                    try await Task.sleep(for: .seconds(1))
                    for holder in holders where !holder.connection.isClosed {
                        _ = await holder.sendRaw([0x17])
                    }
                }
                let sheds = try await node.metrics().sum(closed, labels: ["reason": "reassembly_shed"])
                let survivors = holders.filter { !$0.connection.isClosed }.count
                scenario.note("after the trickle: \(Int(sheds)) shed, \(survivors) holders left; resident \(rss())")
                scenario.check(sheds >= 5, "only \(Int(sheds)) holders were shed: ten hold 80 MiB against a 48 MiB budget")
                scenario.check(survivors <= 5, "\(survivors) holders of 8 MiB each still connected under a 48 MiB budget")
                // Then they stop: every one left is closed within the 5 s message-stall timeout
                // (checked each second).
                let allClosed = await eventually(timeout: .seconds(9), interval: .milliseconds(200)) {
                    (holders + early).allSatisfy { $0.connection.isClosed }
                }
                scenario.check(allClosed, "attackers still connected: \((holders + early).filter { !$0.connection.isClosed }.count)")

                let gap = try await longestGap
                scenario.check(gap < .milliseconds(500), "the legitimate viewer saw nothing for \(gap)")
                scenario.check(!viewer.isClosed, "the legitimate viewer was dropped")
                scenario.check(publisher.isRunning, "the legitimate publisher was cut off")
                let flv = try viewer.flv()
                scenario.check(flv.error == nil && flv.timestampRegressions().isEmpty, "the viewer's FLV: \(flv.error ?? "timestamps go backwards")")
                let video = flv.videoFrames.map(\.timestamp)
                let step = zip(video, video.dropFirst()).map { Int64($1) - Int64($0) }.max() ?? 0
                scenario.check(step < 500, "the viewer's video timeline jumps by \(step) ms")

                // Each attacker closed for its own reason, and counted.
                let metrics = try await node.metrics()
                let shed = metrics.sum(closed, labels: ["reason": "reassembly_shed"])
                let stalled = metrics.sum(closed, labels: ["reason": "message_stalled"])
                let tooLarge = metrics.sum(closed, labels: ["reason": "message_too_large"])
                let exhausted = metrics.sum(closed, labels: ["reason": "reassembly_budget"])
                scenario.note("closed: \(Int(shed)) shed, \(Int(stalled)) stalled, \(Int(tooLarge)) too large, \(Int(exhausted)) at the hard limit")
                scenario.check(shed + stalled == 14, "ten holders and four early command holders: \(Int(shed)) shed + \(Int(stalled)) stalled")
                scenario.check(tooLarge == 2, "\(Int(tooLarge)) media headers before publish refused, expected 2")
                scenario.check(exhausted == 0, "\(Int(exhausted)) connections met the hard limit: the headroom should keep everyone off it")
                scenario.check(node.log.contains("shed: the node's reassembly budget ran short"), "no shed was logged")

                // Memory: the budget bounds what reassembly holds (storage is charged whole, pages are
                // resident only as written, so the growth stays under the budget).
                if let peakBefore, let peakAfter = ProcessMemory.peakResidentKiB(pid: node.process.pid) {
                    let grown = peakAfter - peakBefore
                    scenario.note("peak RSS \(peakBefore) -> \(peakAfter) KiB (+\(grown / 1024) MiB) under an attack on a \(Self.budget >> 20) MiB budget")
                    scenario.check(grown <= Self.budget >> 10, "peak RSS grew \(grown) KiB, over the \(Self.budget >> 20) MiB budget")
                }
                _ = publisher
            }
        }
    }
}
