import NIOCore

/// One FLV tag as read by `FLVTagReader`: its header and its body (a slice of the input).
public struct FLVTag: Sendable {
    public var header: FLVTagHeader
    /// The tag body: the same bytes as the RTMP message body and `MediaFrame.payload`.
    public var body: ByteBuffer

    public init(header: FLVTagHeader, body: ByteBuffer) {
        self.header = header
        self.body = body
    }

    /// The tag as a classified frame, with its 32-bit timestamp as is.
    public func mediaFrame() throws(FLVError) -> MediaFrame {
        try MediaFrame.classified(kind: header.tagType, timestamp: Int64(header.timestamp), payload: body)
    }
}
