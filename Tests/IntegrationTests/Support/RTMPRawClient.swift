import AMF0
import NIOCore
import RTMP

/// A hand-driven RTMP client: plain handshake, then messages built with the RTMP module's
/// encoders or raw bytes. Used to send hostile input and to read exact onStatus codes.
final class RTMPRawClient {
    let connection: RawConnection
    let port: Int
    private var decoder = ChunkDecoder()
    private var encoder = ChunkEncoder()
    /// Received bytes handed to the decoder so far (including the 3073 handshake bytes).
    private var consumed = 0
    private var pending = ByteBuffer()
    /// Messages decoded but not yet taken by a wait.
    private(set) var messages: [RTMPMessage] = []
    private var nextTransactionID = 1.0

    private init(connection: RawConnection, port: Int) {
        self.connection = connection
        self.port = port
    }

    static func connect(port: Int, from localHost: String? = nil, smallReceiveBuffer: Bool = false) async throws -> RTMPRawClient {
        RTMPRawClient(connection: try await RawConnection.connect(port: port, from: localHost, smallReceiveBuffer: smallReceiveBuffer), port: port)
    }

    /// C0 (version 3) + C1 (time, zero, random); reads S0+S1+S2; sends C2 = S1.
    func plainHandshake(timeout: Duration = .seconds(5)) async throws {
        var c0c1: [UInt8] = [0x03, 0, 0, 0, 0, 0, 0, 0, 0]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<(1536 - 8) {
            c0c1.append(UInt8.random(in: 0...255, using: &generator))
        }
        try await self.connection.send(c0c1)
        guard await self.connection.waitForBytes(3073, timeout: timeout) else {
            throw IntegrationFailure("handshake: got \(self.connection.count) of 3073 bytes (S0+S1+S2) within \(timeout); closed: \(self.connection.isClosed)")
        }
        let response = self.connection.bytes()
        guard response[0] == 0x03 else {
            throw IntegrationFailure("handshake: S0 version \(response[0]), expected 3")
        }
        try await self.connection.send(Array(response[1..<1537]))
        self.consumed = 3073
    }

    /// Sends bytes as they are.
    func sendRaw(_ bytes: [UInt8]) async -> Bool {
        await self.connection.trySend(bytes)
    }

    /// Chunks and sends a message with the current outgoing chunk size.
    func send(_ message: RTMPMessage) async throws {
        var buffer = ByteBuffer()
        self.encoder.encode(message, into: &buffer)
        try await self.connection.send(buffer)
    }

    /// The chunked bytes of a message, to send raw (possibly cut).
    func chunkBytes(_ message: RTMPMessage) -> [UInt8] {
        var buffer = ByteBuffer()
        self.encoder.encode(message, into: &buffer)
        return buffer.readBytes(length: buffer.readableBytes) ?? []
    }

    /// Sends Set Chunk Size and uses the new size from then on.
    func setChunkSize(_ size: Int) async throws {
        try await self.send(SetChunkSize(chunkSize: UInt32(size)).message())
        self.encoder.chunkSize = size
    }

    /// Decodes whatever arrived since the last call.
    func pump() throws {
        let fresh = self.connection.bytes(from: self.consumed)
        self.consumed += fresh.count
        self.pending.writeBytes(fresh)
        while true {
            let message: RTMPMessage?
            do {
                message = try self.decoder.next(from: &self.pending)
            } catch {
                throw IntegrationFailure("cannot decode the server's chunk stream: \(error)")
            }
            guard let message else { break }
            self.messages.append(message)
        }
    }

    /// Waits for a command matching `predicate`, bounded by `timeout`.
    func waitForCommand(
        timeout: Duration = .seconds(5),
        what: String,
        where predicate: (CommandMessage) -> Bool
    ) async throws -> CommandMessage {
        var found: CommandMessage?
        func scan() throws -> Bool {
            try self.pump()
            while !self.messages.isEmpty {
                let message = self.messages.removeFirst()
                guard message.typeID == MessageType.commandAMF0.rawValue || message.typeID == MessageType.commandAMF3.rawValue,
                    let command = try? CommandMessage(from: message)
                else { continue }
                if predicate(command) {
                    found = command
                    return true
                }
            }
            return false
        }
        _ = try await eventually(timeout: timeout, interval: .milliseconds(10)) {
            if try scan() { return true }
            // A server that answers and closes (a refusal) may do both between the read above
            // and this check: read what came with the close before giving up.
            guard self.connection.isClosed else { return false }
            _ = try scan()
            return true
        }
        guard let found else {
            throw IntegrationFailure("no \(what) within \(timeout) (connection closed: \(self.connection.isClosed))")
        }
        return found
    }

    private func takeTransactionID() -> Double {
        defer { self.nextTransactionID += 1 }
        return self.nextTransactionID
    }

    /// The connect command for `app`; with `capsEx`, an Enhanced RTMP v2 client's.
    func connectCommand(app: String, transactionID: Double = 1, capsEx: Double? = nil) -> CommandMessage {
        var properties = [
            AMF0Property("app", .string(app)),
            AMF0Property("type", .string("nonprivate")),
            AMF0Property("flashVer", .string("FMLE/3.0 (compatible; estuary-it)")),
            AMF0Property("tcUrl", .string("rtmp://127.0.0.1:\(self.port)/\(app)")),
        ]
        if let capsEx { properties.append(AMF0Property("capsEx", .number(capsEx))) }
        return CommandMessage(name: "connect", transactionID: transactionID, commandObject: .object(properties))
    }

    /// connect → waits for `_result`, and returns it.
    @discardableResult
    func connect(app: String, capsEx: Double? = nil) async throws -> CommandMessage {
        let transactionID = self.takeTransactionID()
        try await self.send(self.connectCommand(app: app, transactionID: transactionID, capsEx: capsEx).message())
        let answer = try await self.waitForCommand(what: "connect _result") {
            ($0.name == "_result" || $0.name == "_error") && $0.transactionID == transactionID
        }
        guard answer.name == "_result" else {
            throw IntegrationFailure("connect answered \(answer.name): \(answer.arguments)")
        }
        return answer
    }

    /// The commands received since the last call (or wait), without waiting.
    func takeCommands() throws -> [CommandMessage] {
        try self.pump()
        let messages = self.messages
        self.messages = []
        return messages.compactMap { message in
            guard message.typeID == MessageType.commandAMF0.rawValue || message.typeID == MessageType.commandAMF3.rawValue else { return nil }
            return try? CommandMessage(from: message)
        }
    }

    /// createStream → the message stream id from `_result`.
    func createStream() async throws -> UInt32 {
        let transactionID = self.takeTransactionID()
        try await self.send(CommandMessage(name: "createStream", transactionID: transactionID).message())
        let answer = try await self.waitForCommand(what: "createStream _result") {
            ($0.name == "_result" || $0.name == "_error") && $0.transactionID == transactionID
        }
        guard answer.name == "_result", let id = answer.arguments.first?.numberValue, id >= 0, id < 65536 else {
            throw IntegrationFailure("createStream answered \(answer.name): \(answer.arguments)")
        }
        return UInt32(id)
    }

    /// A raw publisher (handshake, connect, createStream, publish), tracked by `scenario` for
    /// teardown; returns it and the code of publish's onStatus.
    static func publishing(_ scenario: Scenario, port: Int, app: String, name: String, from localHost: String? = nil) async throws -> (RTMPRawClient, String) {
        let client = try await RTMPRawClient.connect(port: port, from: localHost)
        scenario.track(client.connection)
        try await client.plainHandshake()
        try await client.connect(app: app)
        let streamID = try await client.createStream()
        return (client, try await client.publish(name: name, streamID: streamID))
    }

    /// The `code` of an onStatus command, or nil.
    static func statusCode(_ command: CommandMessage) -> String? {
        guard command.name == "onStatus" else { return nil }
        return command.arguments.first?["code"]?.stringValue
    }

    /// publish → the first onStatus code.
    func publish(name: String, streamID: UInt32) async throws -> String {
        let command = CommandMessage(
            name: "publish",
            transactionID: self.takeTransactionID(),
            arguments: [.string(name), .string("live")]
        )
        try await self.send(command.message(chunkStreamID: 5, streamID: streamID))
        let status = try await self.waitForCommand(what: "publish onStatus") { Self.statusCode($0) != nil }
        return Self.statusCode(status) ?? ""
    }

    /// A publish command's bytes, to send with `sendRaw` when its moment matters (two
    /// publishers at once); `publishStatus()` then reads its answer.
    func publishBytes(name: String, streamID: UInt32) -> [UInt8] {
        chunkBytes(CommandMessage(name: "publish", transactionID: takeTransactionID(), arguments: [.string(name), .string("live")]).message(chunkStreamID: 5, streamID: streamID))
    }

    /// The code of the first onStatus that comes.
    func publishStatus() async throws -> String {
        let status = try await self.waitForCommand(what: "publish onStatus") { Self.statusCode($0) != nil }
        return Self.statusCode(status) ?? ""
    }

    /// play → the first onStatus code that is not an informational reset/start prelude.
    func play(name: String, streamID: UInt32) async throws -> String {
        let command = CommandMessage(
            name: "play",
            transactionID: self.takeTransactionID(),
            arguments: [.string(name), .number(-2)]
        )
        try await self.send(command.message(chunkStreamID: 8, streamID: streamID))
        let status = try await self.waitForCommand(what: "play onStatus") { command in
            guard let code = Self.statusCode(command) else { return false }
            return code != "NetStream.Play.Reset"
        }
        return Self.statusCode(status) ?? ""
    }

    func close() async {
        await self.connection.close()
    }
}
