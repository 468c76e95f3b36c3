import AMF0
import Foundation
import TestSupport
import NIOCore
import RTMP
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Peers that follow the grammar while aiming at the process: each case opens real sockets
/// against the suite's node (with its legitimate stream and viewer, see `BadInputEnvironment`)
/// and asserts a bound, the refusal's metric, the offending connection closed, and the
/// legitimate stream untouched.
extension IntegrationTests.BadInputTests {
    // MARK: Replies are bounded by construction

    @Test("FCPublish with a 60 KB name of invalid UTF-8 is refused before anything is echoed (invalid_stream_name)")
    func fcPublishNameIsCheckedBeforeTheEcho() async throws {
        var echoed = false
        try await Self.hostile(reason: "invalid_stream_name") { client in
            try await client.plainHandshake()
            try await client.connect(app: "live")
            var payload = HostileAMF0.command("FCPublish", transactionID: 3)
            HostileAMF0.rawString([UInt8](repeating: 0xFF, count: 60_000), into: &payload)
            _ = await client.sendRaw(client.chunkBytes(RTMPMessage(type: .commandAMF0, streamID: 0, timestamp: 0, chunkStreamID: 3, payload: payload)))
            _ = await client.connection.waitForClose(timeout: .seconds(5))
            try? client.pump()
            echoed = client.messages.contains { (try? CommandMessage(from: $0))?.name == "onFCPublish" }
        }
        let environment = try #require(BadInputEnvironment.current)
        environment.scenario.check(!echoed, "the node echoed an invalid FCPublish name in onFCPublish")
    }

    @Test("Eight 16 MB commands before connect are refused at their headers: no reassembly, no decoding (message_too_large)")
    func hugeCommandsAreRefusedAtTheirHeaders() async throws {
        let environment = try #require(BadInputEnvironment.current)
        let peakBefore = ProcessMemory.peakResidentKiB(pid: environment.node.process.pid)
        for _ in 0..<8 {
            try await Self.hostile(reason: "message_too_large", checkStream: false) { client in
                try await client.plainHandshake()
                // fmt 0, csid 3: a command (type 20) declaring 0xFFFFFF bytes, then 64 KiB of AMF0 booleans.
                var bytes: [UInt8] = [0x03, 0, 0, 0, 0xFF, 0xFF, 0xFF, 20, 0, 0, 0, 0]
                bytes += [UInt8](repeating: 0x01, count: 65_536)
                _ = await client.sendRaw(bytes)
            }
        }
        try await Self.checkLegitimateStream(environment)
        let peakAfter = ProcessMemory.peakResidentKiB(pid: environment.node.process.pid)
        if let peakBefore, let peakAfter {
            environment.scenario.check(peakAfter - peakBefore < 32 * 1024, "peak RSS grew \(peakAfter - peakBefore) KiB over eight refused 16 MB commands")
            environment.scenario.note("peak RSS \(peakBefore) -> \(peakAfter) KiB over eight refused 16 MB commands")
        }
    }

    @Test("A 60 KB connect of 30,000 AMF0 booleans is refused by the decoder's value budget (bad_amf0)")
    func amf0ValueBudget() async throws {
        try await Self.hostile(reason: "bad_amf0") { client in
            try await client.plainHandshake()
            var payload = HostileAMF0.command("connect", transactionID: 1)
            payload.writeInteger(UInt8(0x0A))  // strict array
            payload.writeInteger(UInt32(30_000))
            for _ in 0..<30_000 { payload.writeBytes([0x01, 0x01]) }
            _ = await client.sendRaw(client.chunkBytes(RTMPMessage(type: .commandAMF0, streamID: 0, timestamp: 0, chunkStreamID: 3, payload: payload)))
        }
    }

    // MARK: Metadata has limits; over them it is dropped and the stream goes on

    @Test("Metadata of 60 KB invalid UTF-8 (180 KB once repaired) is dropped; the publisher stays and a player joins")
    func oversizedMetadataIsDropped() async throws {
        try await Self.droppedMetadata(reason: "too_large") { payload in
            HostileAMF0.rawString(Array("title".utf8), short: true, into: &payload, marker: false)
            HostileAMF0.rawString([UInt8](repeating: 0xFF, count: 60_000), into: &payload)
        }
    }

    @Test("Metadata of 2,000 values is dropped (too_many_values); the publisher stays and a player joins")
    func metadataWithTooManyValuesIsDropped() async throws {
        try await Self.droppedMetadata(reason: "too_many_values") { payload in
            HostileAMF0.rawString(Array("index".utf8), short: true, into: &payload, marker: false)
            payload.writeInteger(UInt8(0x0A))
            payload.writeInteger(UInt32(2000))
            for _ in 0..<2000 { payload.writeBytes([0x01, 0x00]) }
        }
    }

    // MARK: Every wait has a timeout

    @Test("A connection that finishes the handshake and says nothing is closed (connect_timeout)")
    func silentAfterHandshake() async throws {
        try await Self.hostile(reason: "connect_timeout") { client in
            try await client.plainHandshake()
        }
    }

    @Test("A connection that connects and never publishes or plays is told IdleTimeOut and closed (session_start_timeout)")
    func silentAfterConnect() async throws {
        var code: String?
        try await Self.hostile(reason: "session_start_timeout") { client in
            try await client.plainHandshake()
            try await client.connect(app: "live")
            let status = try await client.waitForCommand(timeout: .seconds(5), what: "onStatus") { RTMPRawClient.statusCode($0) != nil }
            code = RTMPRawClient.statusCode(status)
        }
        let environment = try #require(BadInputEnvironment.current)
        environment.scenario.check(code == "NetConnection.Connect.IdleTimeOut", "the idle connection was told \(code ?? "nothing")")
    }

    @Test("A publisher that sends no media is closed (publisher_idle)")
    func silentPublisher() async throws {
        try await Self.hostile(reason: "publisher_idle") { client in
            _ = try await Self.publishingClient(client, name: "silent")
        }
    }

    @Test("An RTMP viewer that never reads is dropped (write_stalled)")
    func rtmpViewerThatNeverReads() async throws {
        try await Self.hostile(reason: "write_stalled", closeWithin: .seconds(20), smallReceiveBuffer: true) { client in
            try await client.plainHandshake()
            try await client.connect(app: "live")
            let streamID = try await client.createStream()
            let code = try await client.play(name: "good", streamID: streamID)
            guard code == "NetStream.Play.Start" else { throw IntegrationFailure("play answered \(code)") }
            await client.connection.stopReading()
        }
    }

    @Test("GET /healthz HT and silence (slowloris) is closed (header_timeout)")
    func slowloris() async throws {
        try await Self.hostileHTTP(reason: "header_timeout") { connection in
            _ = await connection.trySend(Array("GET /healthz HT".utf8))
        }
    }

    @Test("An HTTP-FLV viewer that never reads is dropped (write_stalled)")
    func httpFLVViewerThatNeverReads() async throws {
        try await Self.hostileHTTP(reason: "write_stalled", closeWithin: .seconds(20), smallReceiveBuffer: true) { connection in
            _ = await connection.trySend(Array("GET /live/good.flv HTTP/1.1\r\nHost: estuary\r\n\r\n".utf8))
            _ = await connection.waitForBytes(100, timeout: .seconds(3))
            await connection.stopReading()
        }
    }

    // MARK: Helpers

    /// Publishes on a raw client, sends one `@setDataFrame` whose ECMA array `fill` writes,
    /// and checks that it was dropped (counted under `reason`), that the publisher stayed
    /// connected, and that a player of its stream gets Play.Start and no oversized metadata.
    static func droppedMetadata(reason: String, fill: (inout ByteBuffer) -> Void) async throws {
        let environment = try #require(BadInputEnvironment.current)
        let scenario = environment.scenario
        let node = environment.node
        let metric = "estuary_rtmp_metadata_dropped_total"
        let before = try await node.metrics().sum(metric, labels: ["reason": reason])

        let publisher = try await RTMPRawClient.connect(port: node.rtmpPort)
        scenario.track(publisher.connection)
        let name = "metadata-\(UInt32.random(in: 0...UInt32.max))"
        try await publisher.plainHandshake()
        try await publisher.connect(app: "live")
        let streamID = try await publisher.createStream()
        let code = try await publisher.publish(name: name, streamID: streamID)
        try scenario.require(code == "NetStream.Publish.Start", "publish answered \(code)")
        var payload = ByteBuffer()
        HostileAMF0.rawString(Array("@setDataFrame".utf8), into: &payload)
        HostileAMF0.rawString(Array("onMetaData".utf8), into: &payload)
        payload.writeInteger(UInt8(0x08))  // ECMA array
        payload.writeInteger(UInt32(1))
        fill(&payload)
        payload.writeBytes([0x00, 0x00, 0x09])
        try await publisher.setChunkSize(4096)
        try await publisher.send(RTMPMessage(type: .dataAMF0, streamID: streamID, timestamp: 0, chunkStreamID: 5, payload: payload))

        let counted = await eventually(timeout: .seconds(3), interval: .milliseconds(100)) {
            (try? await node.metrics().sum(metric, labels: ["reason": reason])) ?? 0 > before
        }
        scenario.check(counted, "\(metric){reason=\"\(reason)\"} did not count the dropped metadata")
        scenario.check(!publisher.connection.isClosed, "the publisher was closed for its metadata; only the metadata should go")

        // A player joins the stream: it must get Play.Start and never the oversized metadata.
        let player = try await RTMPRawClient.connect(port: node.rtmpPort)
        scenario.track(player.connection)
        try await player.plainHandshake()
        try await player.connect(app: "live")
        let playStream = try await player.createStream()
        let playCode = try await player.play(name: name, streamID: playStream)
        scenario.check(playCode == "NetStream.Play.Start", "a player of the stream got \(playCode)")
        try await Task.sleep(for: .milliseconds(300))
        try? player.pump()
        let largest = player.messages.filter { $0.typeID == MessageType.dataAMF0.rawValue }.map(\.payload.readableBytes).max() ?? 0
        scenario.check(largest < 65_536, "the player received a \(largest)-byte data message")
        await player.close()
        await publisher.close()
        try await Self.checkLegitimateStream(environment)
    }

    /// An HTTP connection that `attack` drives; the server must close it and count `reason`
    /// in `estuary_http_connections_closed_total`, and the legitimate stream must go on.
    static func hostileHTTP(reason: String, closeWithin: Duration = .seconds(5), smallReceiveBuffer: Bool = false, _ attack: (RawConnection) async throws -> Void) async throws {
        let environment = try #require(BadInputEnvironment.current)
        let scenario = environment.scenario
        let node = environment.node
        let metric = "estuary_http_connections_closed_total"
        let before = try await node.metrics().sum(metric, labels: ["reason": reason])
        let connection = try await RawConnection.connect(port: node.httpPort, smallReceiveBuffer: smallReceiveBuffer)
        scenario.track(connection)
        try await attack(connection)
        // Counted first: a client that stopped reading sees the close only once it reads again.
        let counted = await eventually(timeout: closeWithin, interval: .milliseconds(200)) {
            (try? await node.metrics().sum(metric, labels: ["reason": reason])) ?? 0 > before
        }
        if smallReceiveBuffer { await connection.resumeReading() }
        let closed = await connection.waitForClose(timeout: smallReceiveBuffer ? .seconds(5) : closeWithin)
        scenario.check(closed, "the server did not close the hostile HTTP connection within \(closeWithin) (reason \(reason))")
        await connection.close()
        scenario.check(counted, "\(metric){reason=\"\(reason)\"} did not count the closed connection")
        try await Self.checkLegitimateStream(environment)
    }
}

/// Hand-built AMF0 for hostile input: byte strings that are not valid UTF-8, which the
/// project's encoder (taking Swift strings) cannot produce.
enum HostileAMF0 {
    /// A command's name and transaction id, then a null command object.
    static func command(_ name: String, transactionID: Double) -> ByteBuffer {
        var payload = ByteBuffer()
        rawString(Array(name.utf8), into: &payload)
        payload.writeInteger(UInt8(0x00))
        payload.writeInteger(transactionID.bitPattern)
        payload.writeInteger(UInt8(0x05))
        return payload
    }

    /// A string value (marker 0x02 with a 16-bit length, or 0x0C with a 32-bit one when
    /// longer), or with `marker: false` a bare property name.
    static func rawString(_ bytes: [UInt8], short: Bool = false, into buffer: inout ByteBuffer, marker: Bool = true) {
        if bytes.count <= 0xFFFF || short {
            if marker { buffer.writeInteger(UInt8(0x02)) }
            buffer.writeInteger(UInt16(truncatingIfNeeded: bytes.count))
        } else {
            if marker { buffer.writeInteger(UInt8(0x0C)) }
            buffer.writeInteger(UInt32(bytes.count))
        }
        buffer.writeBytes(bytes)
    }
}

/// A process's resident set from /proc/PID/status, in KiB: its peak (VmHWM) or now (VmRSS).
enum ProcessMemory {
    static func peakResidentKiB(pid: Int32) -> Int? { field("VmHWM:", pid: pid) }
    static func residentKiB(pid: Int32) -> Int? { field("VmRSS:", pid: pid) }

    private static func field(_ name: String, pid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(name) {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }
}
