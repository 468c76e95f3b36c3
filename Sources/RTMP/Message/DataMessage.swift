import AMF0
import NIOCore

/// A data message (type 18, AMF0; or type 15, AMF3 with a leading format byte; RTMP
/// specification 7.1.2): a name followed by values. Carries stream metadata.
///
/// Publishers send metadata as `@setDataFrame`, `onMetaData`, ECMA array; players must receive
/// it as `onMetaData`, ECMA array (see ``metadataMessage()``).
public struct DataMessage: Sendable, Equatable {
    /// The name that asks the server to store the data frame (sent by OBS, ffmpeg, librtmp SDKs).
    public static let setDataFrame = "@setDataFrame"
    /// The metadata handler name players understand.
    public static let onMetaData = "onMetaData"
    /// The chunk stream id nginx-rtmp and SRS use for data messages to players.
    public static let defaultChunkStreamID: UInt32 = 5

    /// The handler name (`@setDataFrame`, `onMetaData`, `|RtmpSampleAccess`, ...).
    public var name: String
    /// The values after the name.
    public var values: [AMF0Value]

    /// Creates a data message.
    public init(name: String, values: [AMF0Value]) {
        self.name = name
        self.values = values
    }

    /// Decodes a type 18 or type 15 message.
    public init(from message: RTMPMessage, decoder: AMF0Decoder = .init()) throws(MessageError) {
        var body = message.payload
        switch message.typeID {
        case MessageType.dataAMF0.rawValue:
            break
        case MessageType.dataAMF3.rawValue:
            guard body.readInteger(as: UInt8.self) != nil else { throw .truncated(.dataAMF3, length: 0) }
        default:
            throw .unexpectedType(message.typeID)
        }
        try self.init(from: body, decoder: decoder)
    }

    /// Decodes an AMF0 data body.
    public init(from payload: ByteBuffer, decoder: AMF0Decoder = .init()) throws(MessageError) {
        var body = payload
        let values: [AMF0Value]
        do {
            values = try decoder.decodeAll(from: &body)
        } catch {
            throw .amf0(error)
        }
        guard let name = values.first?.stringValue else { throw .missingName }
        self.name = name
        self.values = Array(values.dropFirst())
    }

    /// The stream metadata if this is `@setDataFrame`, `onMetaData`, value or `onMetaData`, value
    /// (the value is usually an ECMA array, sometimes an object).
    public var metadata: AMF0Value? {
        if self.name == Self.setDataFrame {
            guard self.values.count >= 2, self.values[0].stringValue == Self.onMetaData else { return nil }
            return self.values[1]
        }
        if self.name == Self.onMetaData {
            return self.values.first
        }
        return nil
    }

    /// `onMetaData` + the metadata value, ready to re-send to players (drops `@setDataFrame`);
    /// nil if this message carries no metadata.
    public func metadataMessage() -> DataMessage? {
        guard let metadata = self.metadata else { return nil }
        return DataMessage(name: Self.onMetaData, values: [metadata])
    }

    /// The encoded body of ``metadataMessage()``, to cache and send as a type 18 payload; nil if
    /// this message carries no metadata.
    public func metadataBody() -> ByteBuffer? {
        guard let message = self.metadataMessage() else { return nil }
        var body = ByteBuffer()
        message.encode(into: &body)
        return body
    }

    /// `|RtmpSampleAccess`, sent to players after Play.Start by nginx-rtmp and SRS (Flash players
    /// need it to read raw audio/video bytes; other players ignore it).
    public static func sampleAccess(audio: Bool = true, video: Bool = true) -> DataMessage {
        DataMessage(name: "|RtmpSampleAccess", values: [.boolean(audio), .boolean(video)])
    }

    /// Appends the AMF0 body.
    public func encode(into buffer: inout ByteBuffer) {
        let encoder = AMF0Encoder()
        encoder.encode(.string(self.name), into: &buffer)
        encoder.encode(self.values, into: &buffer)
    }

    /// The raw type 18 message on the given message stream.
    public func message(
        chunkStreamID: UInt32 = DataMessage.defaultChunkStreamID,
        streamID: UInt32 = 0,
        timestamp: UInt32 = 0
    ) -> RTMPMessage {
        var payload = ByteBuffer()
        self.encode(into: &payload)
        return RTMPMessage(type: .dataAMF0, streamID: streamID, timestamp: timestamp, chunkStreamID: chunkStreamID, payload: payload)
    }
}
