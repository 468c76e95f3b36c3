import AMF0
import Session

/// Why the server closed an RTMP connection. Each case is logged once and counted in
/// `estuary_rtmp_connections_closed_total{reason=…}`.
public enum RTMPConnectionError: Error, Equatable, CustomStringConvertible {
    case handshake(HandshakeError)
    case chunk(ChunkError)
    case message(MessageError)
    case amf0(AMF0Error)
    case commandBeforeConnect(String)
    case unknownCommand(String)
    case badMedia(String)
    case tooManyPendingMessages(Int)
    case handshakeTimeout
    case mediaWithoutPublish
    case evicted
    case invalidStreamName(String)
    case connectTimeout
    case sessionStartTimeout
    case publisherIdle
    case writeStalled
    case messageStalled
    case outboundBacklog(Int)
    case replyTooLarge(Int)

    /// A message-layer error, with AMF0 failures reported as such.
    init(_ error: MessageError) {
        if case .amf0(let amf0) = error {
            self = .amf0(amf0)
        } else {
            self = .message(error)
        }
    }

    /// A short, bounded-cardinality label for metrics.
    public var reason: String {
        switch self {
        case .handshake: "handshake"
        case .chunk(let error):
            switch error {
            case .messageTooLarge: "message_too_large"
            case .chunkSizeTooLarge, .invalidChunkSize: "bad_chunk_size"
            case .unknownChunkStream: "unknown_chunk_stream"
            case .tooManyBufferedBytes: "reassembly_connection_share"
            case .nodeReassemblyBudgetExhausted: "reassembly_budget"
            case .shedByNodeBudget: "reassembly_shed"
            default: "chunk"
            }
        case .message: "bad_message"
        case .amf0: "bad_amf0"
        case .commandBeforeConnect: "command_before_connect"
        case .unknownCommand: "unknown_command"
        case .badMedia: "bad_media"
        case .tooManyPendingMessages: "too_many_pending"
        case .handshakeTimeout: "handshake_timeout"
        case .mediaWithoutPublish: "media_without_publish"
        case .evicted: "evicted"
        case .invalidStreamName: "invalid_stream_name"
        case .connectTimeout: "connect_timeout"
        case .sessionStartTimeout: "session_start_timeout"
        case .publisherIdle: "publisher_idle"
        case .writeStalled: "write_stalled"
        case .messageStalled: "message_stalled"
        case .outboundBacklog: "outbound_backlog"
        case .replyTooLarge: "reply_too_large"
        }
    }

    public var description: String {
        switch self {
        case .handshake(let error): "malformed handshake: \(error)"
        case .chunk(.shedByNodeBudget(let held)):
            "shed: the node's reassembly budget ran short and this connection held the costliest unfinished messages (\(held) bytes)"
        case .chunk(let error): "chunk stream error: \(error)"
        case .message(let error): "malformed message: \(error)"
        case .amf0(let error): "malformed AMF0: \(error)"
        case .commandBeforeConnect(let name): "'\(name)' before connect"
        case .unknownCommand(let name): "unknown command '\(name.prefix(64))'"
        case .badMedia(let why): "bad media: \(why)"
        case .tooManyPendingMessages(let count): "\(count) messages sent while a decision was pending"
        case .handshakeTimeout: "no handshake within the timeout"
        case .mediaWithoutPublish: "media sent without publish"
        case .evicted: "evicted: a newer publisher took the stream over"
        case .invalidStreamName(let name): "invalid stream name '\(name.prefix(64))'"
        case .connectTimeout: "no connect within the timeout after the handshake"
        case .sessionStartTimeout: "no publish or play within the timeout after connect"
        case .publisherIdle: "the publisher sent no media within the idle timeout"
        case .writeStalled: "the peer read nothing within the write-stall timeout"
        case .messageStalled: "an unfinished message received no byte within the message-stall timeout"
        case .outboundBacklog(let bytes): "the peer does not read its replies (\(bytes) bytes queued)"
        case .replyTooLarge(let bytes): "a reply of \(bytes) bytes exceeds RTMP's 24-bit message length (a bug: replies are bounded by construction)"
        }
    }
}

extension RTMPConnectionError {
    /// Why the connection's session (if it had one) ended, for its end's log line and metric.
    var sessionEndReason: SessionEndReason {
        switch self {
        case .evicted: .takenOver
        case .handshakeTimeout, .connectTimeout, .sessionStartTimeout, .publisherIdle, .writeStalled, .messageStalled:
            .timedOut(description)
        default: .failed(description)
        }
    }
}
