import AMF0
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
    /// The kernel send buffer of each connection (SO_SNDBUF; nil leaves the kernel's
    /// autotuning, which lets a viewer that never reads hold about 4 MiB). 256 KiB (the kernel
    /// doubles it) carries 6 Mbit/s over a 300 ms path, and lets a stalled viewer reach the
    /// high water mark, and so its write-stall timeout, within seconds.
    public var socketSendBufferBytes: Int? = 256 * 1024
    /// Connections that finish no handshake within this time are closed.
    public var handshakeTimeout: Duration = .seconds(10)
    /// After the handshake, `connect` must come within this time.
    public var connectTimeout: Duration = .seconds(10)
    /// After `connect` (or after a stream is deleted), `publish` or `play` must come within
    /// this time: a connection that holds a socket and does nothing is closed.
    public var sessionStartTimeout: Duration = .seconds(30)
    /// A publisher that sends no audio, video or data for this long is closed, so that its
    /// stream can be taken over and its viewers are told. Encoders send tens of messages a second.
    public var publisherIdleTimeout: Duration = .seconds(30)
    /// A message begun and then left without a byte for this long closes its connection:
    /// an encoder sends a frame's chunks back to back, so only a peer pinning the buffer of an
    /// unfinished message stops in the middle of one. Checked every fifth of it.
    public var messageStallTimeout: Duration = .seconds(5)
    /// A connection whose socket accepts nothing for this long (it stays above the high water
    /// mark) is closed: a viewer that never reads would otherwise hold its queue, its kernel
    /// send buffer (megabytes) and a descriptor for ever.
    public var writeStallTimeout: Duration = .seconds(30)
    /// How long a connection that is being closed after a final answer may take to flush it.
    public var closeFlushTimeout: Duration = .seconds(5)
    /// The most bytes of replies (acknowledgements, pings, status) queued for a peer that does
    /// not read them; past it the connection is closed.
    public var maxOutboundBytes: Int = 4 * 1024 * 1024
    /// The most message bytes held while a publish or play decision is pending.
    public var maxPendingBytes: Int = 8 * 1024 * 1024
    /// Metadata (`onMetaData`) larger than this, as received or as re-encoded for players
    /// (invalid UTF-8 triples when repaired), is dropped with a warning; the stream goes on.
    public var maxMetadataBytes: Int = 64 * 1024
    /// Metadata with more AMF0 values than this is dropped the same way.
    public var maxMetadataValues: Int = 1024
    /// Connections and connections per client address; over either, a new connection is
    /// closed at accept (nil: no such limit).
    public var connectionLimits = ConnectionLimits()
    /// Whether a player's announced codecs (`fourCcList`, `videoFourCcInfoMap` and
    /// `audioFourCcInfoMap` on `connect`) decide what it is sent: one that did not announce a
    /// stream's HEVC, AV1, VP9 video or its Opus, FLAC, AC-3 audio gets the stream's rung in
    /// H.264 and AAC, or `NetStream.Play.Failed`. Off, every player gets the stream as
    /// published, as players that decode HEVC without announcing it (FFmpeg without
    /// `-rtmp_enhanced_codecs`, SDKs that send legacy codec id 12) expect. (The name is older
    /// than audio negotiation; it covers both.)
    public var negotiateVideoCodecs = true

    public init() {}
}
