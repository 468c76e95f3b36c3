import NIOCore

/// How viewer-serving listeners (RTMP, HTTP) size their receive buffers.
///
/// NIO keeps each channel's receive buffer between reads, at the adaptive allocator's size:
/// 2 KiB by default, for every connection, for its life. A viewer reads little (RTMP
/// acknowledgements and pings, one HTTP request), so its buffer starts at 512 bytes; a
/// publisher's grows with what it sends, up to 64 KiB per read, as before.
public enum ReceiveBuffers {
    public static let allocator = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65536)
}
