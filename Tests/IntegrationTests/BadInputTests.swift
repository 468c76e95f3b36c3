import AMF0
import Foundation
import TestSupport
import NIOCore
import RTMP
import Testing

/// One node shared by the bad-input tests: a legitimate stream (`live/good`, a looping ffmpeg
/// publisher) with an HTTP-FLV viewer attached for the whole suite. Every hostile connection
/// must be closed, counted in the metrics, and must not disturb that stream.
struct BadInputEnvironment: SuiteTrait, TestScoping {
    final class Shared: Sendable {
        let scenario: Scenario
        let node: NodeProcess
        let viewer: HTTPFLVViewer

        init(scenario: Scenario, node: NodeProcess, viewer: HTTPFLVViewer) {
            self.scenario = scenario
            self.node = node
            self.viewer = viewer
        }
    }

    @TaskLocal static var current: Shared?

    static let maxMessageSize = 1_048_576
    static let maxChunkSize = 65536

    func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        try await Scenario.run("bad-input") { scenario in
            let media = try await MediaLibrary.shared.file(.audioVideo)
            // Short timeouts, so the hostile-peer cases that wait on them (HostilePeerTests) are quick.
            var config = NodeConfig(maxMessageSize: Self.maxMessageSize, maxChunkSize: Self.maxChunkSize, publisherGraceSeconds: 2)
            config.connectTimeoutSeconds = 1
            config.sessionStartTimeoutSeconds = 2
            config.publisherIdleTimeoutSeconds = 2
            config.writeStallTimeoutSeconds = 2
            config.httpHeaderTimeoutSeconds = 1
            config.httpIdleTimeoutSeconds = 3
            let node = try await scenario.startNode(config)
            let publisher = try scenario.publish(media, to: node.rtmpURL("live", "good"), name: "publisher", loop: true)
            try await scenario.waitUntilLive(node, "live", "good")
            let viewer = try await scenario.openViewer(node, "live", "good")
            try await Self.$current.withValue(Shared(scenario: scenario, node: node, viewer: viewer)) {
                try await function()
            }
            // After every hostile connection: the publisher is still streaming and the viewer's timeline is intact.
            scenario.check(publisher.isRunning, "the legitimate publisher ended during the bad-input tests: \(publisher.termination.map(\.description) ?? "")")
            let flv = try viewer.flv()
            scenario.check(flv.error == nil, "the legitimate viewer's FLV is corrupt: \(flv.error ?? "")")
            scenario.check(flv.timestampRegressions().isEmpty, "the legitimate viewer's timestamps go backwards: \(flv.timestampRegressions().prefix(5).map { "\($0.previous) -> \($0.next)" })")
            scenario.note("legitimate viewer received \(flv.videoFrames.count) video and \(flv.audioFrames.count) audio frames during the bad-input tests")
        }
    }
}

extension Trait where Self == BadInputEnvironment {
    /// Runs the suite against one node with a legitimate stream and viewer.
    static var badInputEnvironment: Self { BadInputEnvironment() }
}

extension IntegrationTests {
    @Suite("Bad input", .badInputEnvironment)
    struct BadInputTests {
        @Test("A malformed handshake (C0 = 0x42) is closed and counted as handshake")
        func malformedHandshake() async throws {
            try await Self.hostile(reason: "handshake") { client in
                var bytes: [UInt8] = [0x42]
                bytes += (0..<1536).map { _ in UInt8.random(in: 0...255) }
                _ = await client.sendRaw(bytes)
            }
        }

        @Test("A format-3 chunk on a chunk stream that was never started is closed (unknown_chunk_stream)")
        func continuationOfUnknownChunkStream() async throws {
            try await Self.hostile(reason: "unknown_chunk_stream") { client in
                try await client.plainHandshake()
                _ = await client.sendRaw([0xC0 | 10] + [UInt8](repeating: 0x55, count: 64))
            }
        }

        @Test("A format-2 chunk on a chunk stream that was never started is closed (unknown_chunk_stream)")
        func format2OnUnknownChunkStream() async throws {
            // Format 1 may open a chunk stream (librtmp does: LibRTMPPublisherTests); format 2
            // carries no length, so nothing safe can be assumed.
            try await Self.hostile(reason: "unknown_chunk_stream") { client in
                try await client.plainHandshake()
                // fmt 2, csid 11: timestamp delta 0, then 4 body bytes.
                _ = await client.sendRaw([0x80 | 11, 0, 0, 0, 0x05, 0x05, 0x05, 0x05])
            }
        }

        @Test("A message announcing 2 MiB with a 1 MiB limit is closed (message_too_large)")
        func messageOverTheSizeLimit() async throws {
            try await Self.hostile(reason: "message_too_large") { client in
                try await client.plainHandshake()
                // fmt 0, csid 6: timestamp 0, length 0x200000, type 9 (video), stream id 1 (little endian).
                var bytes: [UInt8] = [0x06, 0, 0, 0, 0x20, 0x00, 0x00, 9, 1, 0, 0, 0]
                bytes += [UInt8](repeating: 0x17, count: 128)
                _ = await client.sendRaw(bytes)
            }
        }

        @Test("Set Chunk Size 0x7FFFFFFF with a 64 KiB limit is closed (bad_chunk_size)")
        func chunkSizeOverTheLimit() async throws {
            try await Self.hostile(reason: "bad_chunk_size") { client in
                try await client.plainHandshake()
                _ = await client.sendRaw(client.chunkBytes(SetChunkSize(chunkSize: 0x7FFF_FFFF).message()))
            }
        }

        @Test("A connect whose command object nests 100 levels deep is closed (bad_amf0)")
        func amf0NestedTooDeeply() async throws {
            try await Self.hostile(reason: "bad_amf0") { client in
                try await client.plainHandshake()
                var nested = AMF0Value.object([AMF0Property("leaf", .number(1))])
                for level in 0..<99 {
                    nested = .object([AMF0Property("level\(level)", nested)])
                }
                var connect = client.connectCommand(app: "live")
                connect.commandObject = .object([AMF0Property("app", .string("live")), AMF0Property("deep", nested)])
                _ = await client.sendRaw(client.chunkBytes(connect.message()))
            }
        }

        @Test("A connect whose AMF0 body is cut off mid-string is closed (bad_amf0)")
        func amf0Truncated() async throws {
            try await Self.hostile(reason: "bad_amf0") { client in
                try await client.plainHandshake()
                var payload = ByteBuffer()
                let encoder = AMF0Encoder()
                encoder.encode(.string("connect"), into: &payload)
                encoder.encode(.number(1), into: &payload)
                // Object with a property whose string claims 40 bytes, of which 5 are present; no object end.
                payload.writeBytes([0x03, 0x00, 0x03] + Array("app".utf8) + [0x02, 0x00, 0x28] + Array("liv".utf8))
                let message = RTMPMessage(type: .commandAMF0, streamID: 0, timestamp: 0, chunkStreamID: 3, payload: payload)
                _ = await client.sendRaw(client.chunkBytes(message))
            }
        }

        @Test("An unknown command after connect is closed (unknown_command)")
        func unknownCommand() async throws {
            try await Self.hostile(reason: "unknown_command") { client in
                try await client.plainHandshake()
                try await client.connect(app: "live")
                let command = CommandMessage(name: "notARealCommand", transactionID: 2, arguments: [.string("x")])
                _ = await client.sendRaw(client.chunkBytes(command.message()))
            }
        }

        @Test("publish without connect is closed (command_before_connect)")
        func publishWithoutConnect() async throws {
            try await Self.hostile(reason: "command_before_connect") { client in
                try await client.plainHandshake()
                let publish = CommandMessage(name: "publish", transactionID: 1, arguments: [.string("good"), .string("live")])
                _ = await client.sendRaw(client.chunkBytes(publish.message(chunkStreamID: 5, streamID: 1)))
            }
        }

        @Test("A garbage AVC sequence header from a publisher is closed (bad_media)")
        func garbageAVCSequenceHeader() async throws {
            try await Self.hostile(reason: "bad_media") { client in
                let streamID = try await Self.publishingClient(client, name: "garbage-video")
                // 0x17 0x00 + composition time 0, then a record claiming a 32767-byte SPS that is not there.
                var payload = ByteBuffer()
                payload.writeBytes([0x17, 0x00, 0x00, 0x00, 0x00, 0x01, 0x4D, 0x40, 0x1F, 0xFF, 0xE1, 0x7F, 0xFF, 0xDE, 0xAD, 0xBE, 0xEF])
                let message = RTMPMessage(type: .video, streamID: streamID, timestamp: 0, chunkStreamID: 6, payload: payload)
                _ = await client.sendRaw(client.chunkBytes(message))
            }
        }

        @Test("A garbage AAC AudioSpecificConfig from a publisher is closed (bad_media)")
        func garbageAudioSpecificConfig() async throws {
            try await Self.hostile(reason: "bad_media") { client in
                let streamID = try await Self.publishingClient(client, name: "garbage-audio")
                // 0xAF 0x00 + an AudioSpecificConfig of one byte: object type escape (31) with its 6 extra bits missing.
                var payload = ByteBuffer()
                payload.writeBytes([0xAF, 0x00, 0xF8])
                let message = RTMPMessage(type: .audio, streamID: streamID, timestamp: 0, chunkStreamID: 4, payload: payload)
                _ = await client.sendRaw(client.chunkBytes(message))
            }
        }

        // MARK: Helpers

        /// handshake, connect, createStream, publish (expects NetStream.Publish.Start); returns the stream id.
        static func publishingClient(_ client: RTMPRawClient, name: String) async throws -> UInt32 {
            try await client.plainHandshake()
            try await client.connect(app: "live")
            let streamID = try await client.createStream()
            let code = try await client.publish(name: "\(name)-\(UInt32.random(in: 0...UInt32.max))", streamID: streamID)
            guard code == "NetStream.Publish.Start" else {
                throw IntegrationFailure("publish answered \(code), expected NetStream.Publish.Start")
            }
            return streamID
        }

        /// Connects a raw client, lets `attack` send its bytes, then checks that the server closed
        /// that connection, counted `reason`, and that the legitimate stream kept flowing to its
        /// viewer and still plays for a new RTMP viewer.
        static func hostile(
            reason: String,
            checkStream: Bool = true,
            closeWithin: Duration = .seconds(5),
            smallReceiveBuffer: Bool = false,
            _ attack: (RTMPRawClient) async throws -> Void
        ) async throws {
            let environment = try #require(BadInputEnvironment.current, "the bad-input environment is not set up")
            let scenario = environment.scenario
            let node = environment.node
            let before = try await node.metrics()
            let counterBefore = before.sum("estuary_rtmp_connections_closed_total", labels: ["reason": reason])

            let client = try await RTMPRawClient.connect(port: node.rtmpPort, smallReceiveBuffer: smallReceiveBuffer)
            scenario.track(client.connection)
            try await attack(client)
            var after = before
            if smallReceiveBuffer {
                // A client that stopped reading cannot see the close: wait for the server's
                // count, then read again, to find the close behind what was sent.
                _ = await eventually(timeout: closeWithin, interval: .milliseconds(200)) {
                    guard let sample = try? await node.metrics() else { return false }
                    after = sample
                    return sample.sum("estuary_rtmp_connections_closed_total", labels: ["reason": reason]) > counterBefore
                }
                await client.connection.resumeReading()
            }
            let closed = await client.connection.waitForClose(timeout: smallReceiveBuffer ? .seconds(5) : closeWithin)
            scenario.check(closed, "the server did not close the hostile connection within \(closeWithin) (reason \(reason))")
            await client.close()

            _ = await eventually(timeout: .seconds(3), interval: .milliseconds(100)) {
                guard let sample = try? await node.metrics() else { return false }
                after = sample
                return sample.sum("estuary_rtmp_connections_closed_total", labels: ["reason": reason]) > counterBefore
            }
            let counterAfter = after.sum("estuary_rtmp_connections_closed_total", labels: ["reason": reason])
            scenario.check(
                counterAfter >= counterBefore + 1,
                "estuary_rtmp_connections_closed_total{reason=\"\(reason)\"} went \(counterBefore) -> \(counterAfter); samples:\n\(after.describe("estuary_rtmp_connections_closed_total"))"
            )

            if checkStream { try await Self.checkLegitimateStream(environment) }
        }

        /// The suite-long HTTP-FLV viewer keeps receiving, and a new RTMP viewer gets Play.Start and video.
        static func checkLegitimateStream(_ environment: BadInputEnvironment.Shared) async throws {
            let scenario = environment.scenario
            let viewer = environment.viewer
            let baseline = viewer.receivedBytes
            scenario.check(
                await viewer.waitForProgress(beyond: baseline, bytes: 10_000, timeout: .seconds(5)),
                "the legitimate HTTP-FLV viewer stopped receiving (closed: \(viewer.isClosed), \(viewer.receivedBytes - baseline) new bytes in 5 s)"
            )

            let player = try await RTMPRawClient.connect(port: environment.node.rtmpPort)
            scenario.track(player.connection)
            try await player.plainHandshake()
            try await player.connect(app: "live")
            let streamID = try await player.createStream()
            let code = try await player.play(name: "good", streamID: streamID)
            scenario.check(code == "NetStream.Play.Start", "a new RTMP viewer of the legitimate stream got \(code)")
            var sawVideo = false
            _ = await eventually(timeout: .seconds(5), interval: .milliseconds(20)) {
                guard (try? player.pump()) != nil else { return true }
                sawVideo = player.messages.contains { $0.typeID == MessageType.video.rawValue && $0.payload.readableBytes > 5 }
                return sawVideo || player.connection.isClosed
            }
            scenario.check(sawVideo, "a new RTMP viewer of the legitimate stream got no video within 5 s")
            await player.close()
        }
    }
}
