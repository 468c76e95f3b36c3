/// How streams are segmented for HLS and LL-HLS.
public struct HLSConfiguration: Sendable, Equatable {
    /// Segments are cut at the first keyframe after this much media. 2 s keeps classic HLS
    /// latency near 2.5 s while staying well above what players need to buffer.
    public var targetSegmentDuration: Duration = .seconds(2)
    /// LL-HLS partial segments close after this much media (Apple recommends 200 ms–1 s;
    /// a third of a second keeps three parts per second, the player's hold-back ~1 s).
    public var partTargetDuration: Duration = .milliseconds(334)
    /// Complete segments kept in each playlist's window.
    public var windowSegments: Int = 6
    /// A rendition keeps at most this many bytes of segments (both variants); older
    /// segments go first, whatever the window says.
    public var maxRenditionBytes: Int = 64 << 20
    /// How long a blocking playlist reload or preload-hinted part may wait (the spec asks
    /// servers to answer within three target durations).
    public var blockingTimeout: Duration = .seconds(6)
    /// After a stream ends, its playlists (with EXT-X-ENDLIST) stay this long.
    public var endedRetention: Duration = .seconds(30)

    public init() {}
}
