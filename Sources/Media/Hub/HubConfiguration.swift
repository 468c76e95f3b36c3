/// Limits and policies of a stream hub. Every bound a peer can push against is here.
public struct HubConfiguration: Sendable, Equatable {
    /// Bytes a subscriber may have queued before it skips to the next keyframe.
    /// 4 MiB holds several seconds of an 8 Mbit/s stream; queued packets share the hub's
    /// buffers, so this bounds how much old media a stalled viewer can pin, not a copy.
    public var subscriberQueueBytes: Int = 4 << 20
    /// The GOP cache is dropped (and rebuilt from the next keyframe) when it exceeds this
    /// many frames. A stream that never sends a keyframe must not grow memory forever
    /// (SRS learnt this the hard way). 3000 frames is ~40 s of 30 fps video plus audio.
    public var gopCacheMaxFrames: Int = 3000
    /// ... or this many bytes of payload.
    public var gopCacheMaxBytes: Int = 32 << 20
    /// A second publisher on a live stream is refused (`NetStream.Publish.BadName`) unless
    /// the current one has sent nothing for this long; then the new one takes over.
    /// An active encoder sends a frame every 20–40 ms, so 2 s only ever matches a dead
    /// connection that TCP has not noticed yet (a phone that changed networks).
    public var publisherIdleTakeover: Duration = .seconds(2)

    /// Viewer subscribers are woken at most this often (and at once when they join or
    /// the stream ends). Each wake-up costs a viewer one thread hop and one socket write,
    /// and the kernel's per-write cost dominates fan-out CPU: coalescing a publisher's ~70
    /// bursts a second into 10 writes is what puts Estuary under half of nginx-rtmp's CPU
    /// per delivered Gbit (docs/benchmarks.md: 1.3× nginx waking every burst, 0.61× at
    /// 50 ms, 0.45× at 100 ms). The price is at most this much latency for RTMP/HTTP-FLV
    /// viewers, whose players buffer seconds; the HLS segmenter and the transcoder are
    /// never coalesced. SRS calls this merged write (`mw_latency`, 350 ms by default
    /// there); zero wakes on every burst.
    public var wakeInterval: Duration = .milliseconds(100)

    /// The node's viewer count, shared by its hubs: with one, `wakeInterval` is the bound of
    /// an interval that grows with the node's load (`WakeLoad`); nil merges over the whole
    /// interval whatever the load.
    public var wakeLoad: WakeLoad? = nil

    /// Publisher timestamps that jump by more than this are re-based onto the stream's
    /// timeline (see `TimestampNormalizer`). nil keeps the input's timeline as it is, only
    /// making each track monotonic: for hubs fed from another hub's timeline, such as a
    /// transcoder's renditions, where a gap (frames the transcoder dropped to catch up) is
    /// real and re-basing it would shift one rendition against the source and the others.
    public var timestampJumpThreshold: Duration? = .seconds(1)

    public init() {}
}
