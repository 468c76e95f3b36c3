import AMF0
import NIOCore

/// A command message (RTMP specification 7.1.1 and 7.2): a name, a transaction id, a command
/// object and optional arguments, AMF0 encoded.
///
/// Decoded from type 20 (AMF0) and type 17 (AMF3) bodies. A type 17 body starts with a format
/// byte (0) followed by AMF0 values, which is how ffmpeg and librtmp read it; AMF3 values
/// inside (marker 0x11) are rejected as unsupported.
public struct CommandMessage: Sendable, Equatable {
    /// The chunk stream id Flash Media Server, nginx-rtmp and SRS use for connection-level commands.
    public static let defaultChunkStreamID: UInt32 = 3

    /// The command name (`connect`, `publish`, `_result`, ...).
    public var name: String
    /// The transaction id; 0 for commands that expect no answer (e.g. `onStatus`).
    public var transactionID: Double
    /// The command object: properties for `connect` and its `_result`, usually `.null` otherwise.
    public var commandObject: AMF0Value
    /// The remaining values.
    public var arguments: [AMF0Value]

    /// Creates a command.
    public init(name: String, transactionID: Double, commandObject: AMF0Value = .null, arguments: [AMF0Value] = []) {
        self.name = name
        self.transactionID = transactionID
        self.commandObject = commandObject
        self.arguments = arguments
    }

    /// Decodes a type 20 or type 17 message.
    public init(from message: RTMPMessage, decoder: AMF0Decoder = .init()) throws(MessageError) {
        var body = message.payload
        switch message.typeID {
        case MessageType.commandAMF0.rawValue:
            break
        case MessageType.commandAMF3.rawValue:
            guard body.readInteger(as: UInt8.self) != nil else {
                throw .truncated(.commandAMF3, length: 0)
            }
        default:
            throw .unexpectedType(message.typeID)
        }
        try self.init(from: body, decoder: decoder)
    }

    /// Decodes an AMF0 command body. A missing transaction id or command object reads as 0 / `.null`.
    public init(from payload: ByteBuffer, decoder: AMF0Decoder = .init()) throws(MessageError) {
        var body = payload
        let values: [AMF0Value]
        do {
            values = try decoder.decodeAll(from: &body)
        } catch {
            throw .amf0(error)
        }
        guard let name = values.first?.stringValue else { throw .missingName }
        var transactionID = 0.0
        if values.count > 1 {
            guard let number = values[1].numberValue else { throw .missingTransactionID(command: name) }
            transactionID = number
        }
        self.name = name
        self.transactionID = transactionID
        self.commandObject = values.count > 2 ? values[2] : .null
        self.arguments = values.count > 3 ? Array(values[3...]) : []
    }

    /// Appends the AMF0 body.
    public func encode(into buffer: inout ByteBuffer) {
        let encoder = AMF0Encoder()
        encoder.encode(.string(self.name), into: &buffer)
        encoder.encode(.number(self.transactionID), into: &buffer)
        encoder.encode(self.commandObject, into: &buffer)
        encoder.encode(self.arguments, into: &buffer)
    }

    /// The raw type 20 message. Connection-level commands go on message stream 0; NetStream
    /// commands and their `onStatus` answers go on the stream's id (nginx-rtmp uses chunk stream 5 for those).
    public func message(
        chunkStreamID: UInt32 = CommandMessage.defaultChunkStreamID,
        streamID: UInt32 = 0,
        timestamp: UInt32 = 0
    ) -> RTMPMessage {
        var payload = ByteBuffer()
        self.encode(into: &payload)
        return RTMPMessage(type: .commandAMF0, streamID: streamID, timestamp: timestamp, chunkStreamID: chunkStreamID, payload: payload)
    }
}
