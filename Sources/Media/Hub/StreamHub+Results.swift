extension StreamHub {
    public enum AttachResult: Sendable, Equatable {
        /// The publisher is now the stream's source; `replacedIdle` when it displaced an idle one.
        case attached(replacedIdle: Bool)
        /// Another publisher is live (it sent media `idleFor` ago).
        case busy(idleFor: Duration)
        /// The stream belongs to another owner (see ``attachPublisher(id:owner:now:evict:)``)
        /// whose publisher is idle or gone but whose grace period has not ended.
        case notOwner
        /// The hub has ended; ask the registry for a new one.
        case ended
    }

    public struct Statistics: Sendable, Equatable {
        /// Every frame and payload byte taken in, configuration records and metadata included.
        public var framesIn = 0
        public var bytesIn = 0
        /// Coded video frames and their FLV tag body bytes (sequence headers excluded).
        public var videoFramesIn = 0
        public var videoBytesIn = 0
        /// Coded audio frames and their FLV tag body bytes (sequence headers excluded).
        public var audioFramesIn = 0
        public var audioBytesIn = 0
        /// Every subscriber, internal consumers (HLS segmenter, transcoder, bus forwarding)
        /// included.
        public var subscribers = 0
        /// Players (RTMP, HTTP-FLV): subscribers with `isViewer`. Pipelines
        /// (`FrameSubscription`: HLS segmenter, transcoder, bus forwarding) are not counted.
        public var viewers = 0
        /// Subscribers that keep an on-demand stream open (`HubSubscriber.keepsStreamOpen`):
        /// viewers, a transcoder's feed, a forward. What a bus mirror's or an edge pull's idle
        /// check reads.
        public var holders = 0
        public var hasPublisher = false
        /// Times any subscriber's queue overflowed and it skipped to the next keyframe, and
        /// the media frames dropped doing so (`HubSubscriber.Statistics`, over all of them).
        public var viewerSkips = 0
        public var viewerDroppedFrames = 0
        public var timestampRebases = 0
        public var gopFrames = 0
    }
}
