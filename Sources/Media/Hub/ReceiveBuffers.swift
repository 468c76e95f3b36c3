import NIOCore

/// How viewer-serving listeners (RTMP, HTTP) size their receive buffers.
///
/// NIO keeps a channel's receive buffers between reads (`NIOPooledRecvBufferAllocator`), up
/// to one per read of a wake-up (`maxMessagesPerRead`), each at the largest size the
/// allocator ever asked for, for the life of the connection; and it adds one whenever the
/// kept buffer is still referenced when the next read comes (an RTMP handshake holds C1
/// until it sends S2). A viewer reads little (RTMP acknowledgements and pings, one HTTP
/// request), but the 1.5 KiB of a handshake grew an adaptive buffer to 2 KiB and a second
/// one was kept beside it: 2.5 KiB a viewer, for nothing.
public enum ReceiveBuffers {
    /// An RTMP connection until it publishes: 512 bytes a read, one read a wake-up, so the
    /// pool holds one 512-byte buffer (a handshake takes four reads).
    public static let rtmpSession = FixedSizeRecvByteBufferAllocator(capacity: 512)
    public static let rtmpSessionReadsPerWakeUp: UInt = 1
    /// A publisher's, once it publishes (`RTMPServerConnectionHandler`): grows with what it
    /// sends, up to 64 KiB a read, four reads a wake-up (NIO's default).
    public static let publisher = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: 65536)
    public static let publisherReadsPerWakeUp: UInt = 4
    /// An HTTP connection: starts at 512 bytes, which holds a viewer's request.
    public static let http = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65536)
}
