import AMF0

/// Errors thrown while decoding typed messages from raw ``RTMPMessage`` payloads.
public enum MessageError: Error, Equatable, Sendable {
    /// The payload is shorter than the message requires.
    case truncated(MessageType, length: Int)
    /// The raw message's type id is not the one the decoder handles.
    case unexpectedType(UInt8)
    /// The AMF0 body could not be decoded.
    case amf0(AMF0Error)
    /// A command or data message did not start with a name string.
    case missingName
    /// A command did not carry a numeric transaction id in second position.
    case missingTransactionID(command: String)
    /// A command lacks an argument it needs, or the argument has the wrong AMF0 type.
    case invalidArgument(command: String, position: Int)
    /// Set Peer Bandwidth carried a limit type other than 0, 1 or 2.
    case invalidLimitType(UInt8)
}
