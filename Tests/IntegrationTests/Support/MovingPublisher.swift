import AMF0
import Foundation
import NIOCore
import RTMP
import Synchronization

/// A minimal Enhanced RTMP v2 publisher, as the spec describes one: it advertises the
/// reconnect capability (`capsEx` 0x01) in `connect`, streams an FLV file at its pace, and
/// when the server sends `NetConnection.Connect.ReconnectRequest` it opens a new connection
/// to the request's `tcUrl` (or its own), publishes the same stream there, switches at the
/// next video keyframe (metadata and sequence headers first) and only then closes the old
/// connection. No peer we can run speaks this, so the test writes it.
final class MovingPublisher: Sendable {
    /// What happened, for the test to check.
    struct Report: Sendable {
        /// The server URLs it moved to, in order.
        var moves: [String] = []
        /// The `capsEx` each server answered in `connect`'s `_result` (nil: none).
        var serverCapsEx: [Double?] = []
        var videoTags = 0
        var audioTags = 0
        /// Why it stopped early, if it did.
        var failure: String?
    }

    private let tags: [FLVTag]
    private let app: String
    private let name: String
    private let state = Mutex(Report())
    private let stopped = Mutex(false)

    init(file: URL, app: String, name: String) throws {
        let flv = FLVStream.parse([UInt8](try Data(contentsOf: file)))
        guard flv.error == nil, !flv.tags.isEmpty else {
            throw IntegrationFailure("\(file.path) is not a usable FLV file: \(flv.error ?? "no tags")")
        }
        self.tags = flv.tags
        self.app = app
        self.name = name
    }

    var report: Report { self.state.withLock { $0 } }

    func stop() { self.stopped.withLock { $0 = true } }

    /// Publishes to `port` and streams the file `loops` times (timestamps continue), moving
    /// when asked; returns when done, stopped, or on a failure (in the report).
    func run(port: Int, loops: Int, scenario: Scenario) async {
        do {
            try await self.stream(port: port, loops: loops, scenario: scenario)
        } catch {
            self.state.withLock { $0.failure = "\(error)" }
        }
    }

    private func open(port: Int, scenario: Scenario) async throws -> (RTMPRawClient, UInt32) {
        let client = try await RTMPRawClient.connect(port: port)
        scenario.track(client.connection)
        try await client.plainHandshake()
        try await client.setChunkSize(4096)
        let result = try await client.connect(app: self.app, capsEx: Double(ConnectCommand.reconnectCapability))
        self.state.withLock { $0.serverCapsEx.append(result.commandObject["capsEx"]?.numberValue) }
        let streamID = try await client.createStream()
        let code = try await client.publish(name: self.name, streamID: streamID)
        guard code == "NetStream.Publish.Start" else {
            throw IntegrationFailure("publish \(self.app)/\(self.name) on :\(port) answered \(code)")
        }
        return (client, streamID)
    }

    private func stream(port: Int, loops: Int, scenario: Scenario) async throws {
        var (client, streamID) = try await self.open(port: port, scenario: scenario)
        let headers = self.tags.filter { Self.isHeader($0) }
        let span = Int(self.tags.last?.timestamp ?? 0) - Int(self.tags.first?.timestamp ?? 0) + 33
        let start = ContinuousClock.now
        var move: String?
        for loop in 0..<max(1, loops) {
            for tag in self.tags {
                if self.stopped.withLock({ $0 }) { await client.close(); return }
                // Sequence headers and metadata go once, at the start and after a move.
                if loop > 0, Self.isHeader(tag) { continue }
                let timestamp = UInt32(Int(tag.timestamp) + loop * span)
                let due = Duration.milliseconds(Int(timestamp) - 300)
                let elapsed = ContinuousClock.now - start
                if due > elapsed { try await Task.sleep(for: due - elapsed) }
                if move == nil {
                    for command in try client.takeCommands() where RTMPRawClient.statusCode(command) == "NetConnection.Connect.ReconnectRequest" {
                        move = command.arguments.first?["tcUrl"]?.stringValue ?? "rtmp://127.0.0.1:\(client.port)/\(self.app)"
                    }
                }
                if let target = move, tag.isKeyframe, tag.isMediaFrame {
                    guard let url = URLComponents(string: target), let newPort = url.port else {
                        throw IntegrationFailure("cannot reconnect to '\(target)'")
                    }
                    let (next, nextStreamID) = try await self.open(port: newPort, scenario: scenario)
                    for header in headers {
                        try await next.send(Self.message(header, timestamp: timestamp, streamID: nextStreamID))
                    }
                    await client.close()
                    (client, streamID) = (next, nextStreamID)
                    self.state.withLock { $0.moves.append(target) }
                    move = nil
                }
                try await client.send(Self.message(tag, timestamp: timestamp, streamID: streamID))
                self.state.withLock { report in
                    if tag.type == FLVTag.video { report.videoTags += 1 } else if tag.type == FLVTag.audio { report.audioTags += 1 }
                }
            }
        }
        await client.close()
    }

    /// Metadata, or an AVC / AAC sequence header.
    private static func isHeader(_ tag: FLVTag) -> Bool {
        !tag.isMediaFrame
    }

    private static func message(_ tag: FLVTag, timestamp: UInt32, streamID: UInt32) -> RTMPMessage {
        var payload = ByteBuffer()
        let type: MessageType
        let chunkStreamID: UInt32
        switch tag.type {
        case FLVTag.audio:
            (type, chunkStreamID) = (.audio, 4)
        case FLVTag.video:
            (type, chunkStreamID) = (.video, 6)
        default:
            (type, chunkStreamID) = (.dataAMF0, 5)
            AMF0Encoder().encode(.string("@setDataFrame"), into: &payload)
        }
        payload.writeBytes(tag.data)
        return RTMPMessage(type: type, streamID: streamID, timestamp: tag.type == FLVTag.video || tag.type == FLVTag.audio ? timestamp : 0, chunkStreamID: chunkStreamID, payload: payload)
    }
}
