import NIOCore

/// User Control Message events (type 4, RTMP specification 6.2 and 7.1.7). They travel on chunk
/// stream 2, message stream 0; the body is a 2-byte event type followed by event data.
public enum UserControl: Sendable, Equatable {
    /// Event 0: the stream became functional (sent before Play.Start / after Publish.Start).
    case streamBegin(streamID: UInt32)
    /// Event 1: playback of the stream is over.
    case streamEOF(streamID: UInt32)
    /// Event 2: no more data on the stream for now.
    case streamDry(streamID: UInt32)
    /// Event 3: the client's buffer length for a stream, in milliseconds.
    case setBufferLength(streamID: UInt32, milliseconds: UInt32)
    /// Event 4: the stream is recorded (not live).
    case streamIsRecorded(streamID: UInt32)
    /// Event 6: the server pings the client with a timestamp.
    case pingRequest(timestamp: UInt32)
    /// Event 7: the client answers a ping with the request's timestamp.
    case pingResponse(timestamp: UInt32)
    /// Any other event type (e.g. 31/32, Flash's buffer empty/ready) with its raw data.
    case unknown(eventType: UInt16, data: ByteBuffer)

    /// Decodes the body.
    public init(from payload: ByteBuffer) throws(MessageError) {
        var body = payload
        guard let eventType = body.readInteger(as: UInt16.self) else {
            throw .truncated(.userControl, length: payload.readableBytes)
        }
        func read() throws(MessageError) -> UInt32 {
            guard let value = body.readInteger(as: UInt32.self) else {
                throw .truncated(.userControl, length: payload.readableBytes)
            }
            return value
        }
        switch eventType {
        case 0: self = .streamBegin(streamID: try read())
        case 1: self = .streamEOF(streamID: try read())
        case 2: self = .streamDry(streamID: try read())
        case 3:
            let streamID = try read()
            self = .setBufferLength(streamID: streamID, milliseconds: try read())
        case 4: self = .streamIsRecorded(streamID: try read())
        case 6: self = .pingRequest(timestamp: try read())
        case 7: self = .pingResponse(timestamp: try read())
        default: self = .unknown(eventType: eventType, data: body)
        }
    }

    /// The 2-byte event type.
    public var eventType: UInt16 {
        switch self {
        case .streamBegin: return 0
        case .streamEOF: return 1
        case .streamDry: return 2
        case .setBufferLength: return 3
        case .streamIsRecorded: return 4
        case .pingRequest: return 6
        case .pingResponse: return 7
        case .unknown(let eventType, _): return eventType
        }
    }

    /// Appends the body.
    public func encode(into buffer: inout ByteBuffer) {
        buffer.writeInteger(self.eventType)
        switch self {
        case .streamBegin(let value), .streamEOF(let value), .streamDry(let value), .streamIsRecorded(let value),
            .pingRequest(let value), .pingResponse(let value):
            buffer.writeInteger(value)
        case .setBufferLength(let streamID, let milliseconds):
            buffer.writeInteger(streamID)
            buffer.writeInteger(milliseconds)
        case .unknown(_, let data):
            buffer.writeImmutableBuffer(data)
        }
    }

    /// The raw message on the protocol control chunk stream (2) and message stream 0.
    public func message(chunkStreamID: UInt32 = 2, timestamp: UInt32 = 0) -> RTMPMessage {
        var payload = ByteBuffer()
        self.encode(into: &payload)
        return RTMPMessage(type: .userControl, streamID: 0, timestamp: timestamp, chunkStreamID: chunkStreamID, payload: payload)
    }
}
