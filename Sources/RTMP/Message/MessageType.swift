import AMF0

/// RTMP message type ids (RTMP specification, sections 5.4 and 7.1).
public enum MessageType: UInt8, Sendable, CaseIterable {
    /// Set Chunk Size (5.4.1).
    case setChunkSize = 1
    /// Abort Message (5.4.2).
    case abort = 2
    /// Acknowledgement (5.4.3).
    case acknowledgement = 3
    /// User Control Message (6.2).
    case userControl = 4
    /// Window Acknowledgement Size (5.4.4).
    case windowAcknowledgementSize = 5
    /// Set Peer Bandwidth (5.4.5).
    case setPeerBandwidth = 6
    /// Audio data (7.1.4).
    case audio = 8
    /// Video data (7.1.5).
    case video = 9
    /// Data message, AMF3 encoded (7.1.2).
    case dataAMF3 = 15
    /// Shared object message, AMF3 encoded (7.1.3).
    case sharedObjectAMF3 = 16
    /// Command message, AMF3 encoded (7.1.1).
    case commandAMF3 = 17
    /// Data message, AMF0 encoded (7.1.2): `@setDataFrame`, `onMetaData`.
    case dataAMF0 = 18
    /// Shared object message, AMF0 encoded (7.1.3).
    case sharedObjectAMF0 = 19
    /// Command message, AMF0 encoded (7.1.1): `connect`, `publish`, `_result`...
    case commandAMF0 = 20
    /// Aggregate message (7.1.6).
    case aggregate = 22

    /// True for the protocol control messages (types 1 to 6), which travel on chunk stream 2, message stream 0.
    public var isProtocolControl: Bool { self.rawValue <= 6 }
}
