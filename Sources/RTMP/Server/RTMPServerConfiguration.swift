import Media

/// Settings of an RTMP listener.
public struct RTMPServerConfiguration: Sendable {
    public var host: String = "0.0.0.0"
    public var port: Int = 1935
    /// Limits on what peers may send (message size, chunk size, chunk streams).
    public var chunkLimits = ChunkLimits()
    /// Our outgoing chunk size, announced with Set Chunk Size right after connect.
    /// 4096 is what nginx-rtmp and SRS use: large enough that a video frame costs few
    /// chunk headers, small enough that audio is not held behind a big video frame.
    public var outgoingChunkSize: Int = RTMPChunkSerializer.chunkSize
    /// Window Acknowledgement Size and Set Peer Bandwidth we announce (bytes).
    public var windowAcknowledgementSize: UInt32 = 2_500_000
    /// How many messages a connection may send while a publish or play decision is
    /// pending, before it is treated as abuse. Encoders wait for `onStatus`, so a
    /// handful is plenty.
    public var maxPendingMessages: Int = 256
    /// Socket send buffer thresholds for viewers: above `high`, the viewer stops draining
    /// its hub queue until the kernel takes the bytes; the queue's own bound then applies.
    public var writeBufferLowWaterMark: Int = 64 * 1024
    public var writeBufferHighWaterMark: Int = 256 * 1024
    /// Connections that finish no handshake within this time are closed.
    public var handshakeTimeout: Duration = .seconds(10)

    public init() {}
}
