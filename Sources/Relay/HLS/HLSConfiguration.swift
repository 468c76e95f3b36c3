import Foundation

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
    /// Every rendition of the node together keeps at most this many bytes, windows and open
    /// segments (`HLSByteBudget`): the smaller of 2 GiB and a quarter of the machine's
    /// memory, at least 256 MiB.
    public var maxNodeBytes: Int = HLSConfiguration.defaultMaxNodeBytes
    public static let defaultMaxNodeBytes: Int = {
        let quarter = Int(clamping: ProcessInfo.processInfo.physicalMemory / 4)
        return max(256 << 20, min(2 << 30, quarter))
    }()
    /// The most the open (unfinished) segment may hold, both variants together: its LL-HLS
    /// parts and what the MPEG-TS muxer buffers until the segment completes. Segments end
    /// only at keyframes, so without a bound a publisher that stops sending them (or sends
    /// one a minute at a high bitrate) grows one segment for as long as it likes, outside
    /// the window's bound. A third of `maxRenditionBytes`: a finished segment joins the
    /// window, which must still hold three of them, the shortest live playlist RFC 8216
    /// (6.2.2) allows. With the defaults, 21 MiB: a 2 s segment at 44 Mbit/s, or a 20 s one
    /// at 4.4 Mbit/s. Past it the segment is abandoned (or, at a keyframe, cut early).
    public var maxOpenSegmentBytes: Int { maxRenditionBytes / 3 }
    /// The most media the open segment may span: ten target durations (20 s by default).
    /// Keyframe intervals of live encoders are 1–10 s; an open segment older than this has
    /// lost its keyframes, and its parts (three a second) would keep growing the playlists
    /// every blocking reload renders, even at a bitrate too low for `maxOpenSegmentBytes`.
    public var maxOpenSegmentDuration: Duration { targetSegmentDuration * 10 }
    /// How long a blocking playlist reload or preload-hinted part may wait (the spec asks
    /// servers to answer within three target durations).
    public var blockingTimeout: Duration = .seconds(6)
    /// After a stream ends, its playlists (with EXT-X-ENDLIST) stay this long.
    public var endedRetention: Duration = .seconds(30)

    public init() {}
}
