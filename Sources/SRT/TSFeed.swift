import Dispatch
import LibAV
import Logging
import Media
import NIOCore

/// One stream's MPEG-TS for SRT players, muxed once however many watch: a subscription to
/// the hub's frames, libavformat's `mpegts` muxer (`MemoryMuxer`) on a serial queue of its
/// own, the ring (`TSChunkRing`) it appends to, and the thread (`TSSender`) that sends each
/// chunk to every player.
///
/// Each batch the hub hands over is muxed and taken, and its whole SRT messages go to the
/// players at once; a last partial message waits for the next batch, and a batch of audio
/// alone in a stream with video waits whole for the next video frame, at most `holdLimit`
/// (`TSMessagePacker`). Before each keyframe the output so far is taken
/// and the tables armed, so the keyframe's chunk starts with PAT and PMT: a player joins
/// there. New codec parameters open a new muxer at the next keyframe.
final class TSFeed: Sendable {
    let hub: StreamHub
    let ring: TSChunkRing
    let sender: TSSender
    private let subscription: FrameSubscription

    /// The longest bytes are held (a frame's last partial SRT message, an audio frame
    /// waiting for video): above the gap between two frames of 25 fps video, so held bytes
    /// nearly always ride with the next video frame; what it adds to an SRT player's latency
    /// is that gap, never more than this.
    static let holdLimit: DispatchTimeInterval = .milliseconds(45)

    /// Subscribes to `hub`; nil when the hub has ended. `writeTimeout`: how long a player's
    /// sends may fail for a full buffer before it is dropped.
    init?(hub: StreamHub, maxBytes: Int, writeTimeout: Duration, logger: Logger) {
        let ring = TSChunkRing(maxBytes: maxBytes, maxChunks: 4096)
        let queue = DispatchQueue(label: "estuary.srt.ts-feed")
        let muxing = TSFeedMuxing(ring: ring, queue: queue, logger: logger)
        // The hub's byte bound applies until the queue drains: a muxer that falls behind
        // costs its players frames (to the next keyframe), never memory.
        guard let subscription = FrameSubscription.start(on: hub, delivery: .wake { drain in
            queue.async { muxing.process(drain()) }
        }, keepsStreamOpen: true) else { return nil }
        self.hub = hub
        self.ring = ring
        self.subscription = subscription
        sender = TSSender(ring: ring, writeTimeout: writeTimeout)
    }

    /// The last player left: no more muxing. Players still reading see the end.
    func stop() {
        subscription.cancel()
        ring.end()
        sender.stop()
    }
}

/// The muxing side of a `TSFeed`. Only ever used on the feed's serial queue, one batch
/// after another, hence `@unchecked Sendable`: the wake-up closure that carries it there is
/// called on the publisher's thread.
private final class TSFeedMuxing: @unchecked Sendable {
    private let ring: TSChunkRing
    private let queue: DispatchQueue
    private let logger: Logger
    private var packer = TSMessagePacker()
    /// When the bytes the packer holds began to wait (the take they came from).
    private var heldSince: DispatchTime?
    /// A timer is set to look at the held bytes: one at a time, not one per take (a stream
    /// takes 50–100 times a second, and a timer is a thread's wake-up).
    private var holdTimerSet = false
    private var videoConfiguration: MediaFrame?
    private var audioConfiguration: MediaFrame?
    private var configurationChanged = false
    /// The configuration as it stands gives no track the muxer takes (said once, until a
    /// new sequence header).
    private var unmuxable = false
    private var muxer: MemoryMuxer?
    /// The output being gathered starts where a player can join.
    private var gatheringJoinable = false
    /// Audio-only streams: when the last joinable chunk began (a join point a second).
    private var lastAudioJoin: Int64?

    init(ring: TSChunkRing, queue: DispatchQueue, logger: Logger) {
        self.ring = ring
        self.queue = queue
        self.logger = logger
    }

    /// Hands the muxer's output to the packer, and what it gives back to the ring; a
    /// joinable output, or the last one (`flush`), leaves nothing held.
    private func append(_ output: ByteBuffer, joinable: Bool, flush: Bool = false, holdAll: Bool = false) {
        let wasHolding = packer.isHolding
        let chunks = packer.add(output, joinable: joinable, holdAll: holdAll && !flush)
        for chunk in chunks {
            ring.append(chunk.bytes, joinable: chunk.joinable)
        }
        if flush, let chunk = packer.flush() { ring.append(chunk.bytes, joinable: chunk.joinable) }
        guard packer.isHolding else {
            heldSince = nil
            return
        }
        // What is held now came with this take, unless nothing went out and it was held before.
        if !chunks.isEmpty || !wasHolding || heldSince == nil { heldSince = .now() }
        armHoldTimer()
    }

    /// Sends the held tail once it has waited `holdLimit`.
    private func armHoldTimer() {
        guard !holdTimerSet, let since = heldSince else { return }
        holdTimerSet = true
        queue.asyncAfter(deadline: since + TSFeed.holdLimit) { [self] in
            holdTimerSet = false
            guard packer.isHolding, let since = heldSince else { return }
            guard DispatchTime.now() >= since + TSFeed.holdLimit else {
                // Newer bytes are held: look again when they have waited as long.
                armHoldTimer()
                return
            }
            if let chunk = packer.flush() { ring.append(chunk.bytes, joinable: chunk.joinable) }
            heldSince = nil
        }
    }

    func process(_ batch: FrameSubscription.Batch) {
        for frame in batch.frames {
            process(frame)
        }
        // A batch of audio alone, in a stream with video, waits for the next video frame.
        take(resendHeaders: false, holdAll: videoConfiguration != nil && !batch.frames.contains { $0.kind == .video })
        if batch.ended {
            if let muxer, let rest = try? muxer.finish() { append(rest, joinable: false) }
            if let chunk = packer.flush() { ring.append(chunk.bytes, joinable: chunk.joinable) }
            muxer = nil
            ring.end()
        }
    }

    private func process(_ frame: MediaFrame) {
        if frame.isSequenceHeader {
            switch frame.kind {
            case .video where videoConfiguration?.payload != frame.payload:
                configurationChanged = configurationChanged || muxer != nil
                unmuxable = false
                videoConfiguration = frame
            case .audio where audioConfiguration?.payload != frame.payload:
                configurationChanged = configurationChanged || muxer != nil
                unmuxable = false
                audioConfiguration = frame
            default:
                break
            }
            return
        }
        guard frame.kind != .script else { return }
        let joinPoint: Bool
        if videoConfiguration != nil {
            joinPoint = frame.kind == .video && frame.isKeyframe
        } else {
            joinPoint = frame.kind == .audio && lastAudioJoin.map { frame.timestamp - $0 >= 1000 } ?? true
            if joinPoint { lastAudioJoin = frame.timestamp }
        }
        if muxer == nil || (configurationChanged && joinPoint) {
            // Nothing plays before a join point.
            guard joinPoint, !unmuxable else { return }
            if let muxer, let rest = try? muxer.finish() { append(rest, joinable: gatheringJoinable, flush: true) }
            muxer = nil
            configurationChanged = false
            // Each track on its own: one the TS muxer cannot carry (MP3 without a sequence
            // header) is left out, and the other still plays. Opus goes in with its control headers.
            let video = videoConfiguration.flatMap { try? VideoTrack(sequenceHeader: $0) }
            let audio = audioConfiguration.flatMap { try? AudioTrack(sequenceHeader: $0) }
            do {
                // A chunk is a batch's worth, but a new feed's first batch is the hub's
                // whole cached GOP: the backstop is above any GOP the ring keeps.
                muxer = try MemoryMuxer(container: .mpegTS, video: video, audio: audio, maximumBufferedBytes: 32 * 1024 * 1024)
            } catch {
                unmuxable = true
                logger.warning("SRT playback cannot mux this stream as MPEG-TS: \(error)")
                return
            }
            // A new muxer's first output is its tables.
            gatheringJoinable = true
        } else if joinPoint {
            take(resendHeaders: true)
            gatheringJoinable = true
        }
        guard let muxer else { return }
        // A frame of a track the muxer was made without is not played.
        if frame.kind == .video ? muxer.videoTrack == nil : muxer.audioTrack == nil { return }
        do {
            try muxer.write(frame)
        } catch {
            // The next join point opens a muxer anew.
            logger.warning("SRT playback's muxer refused a frame: \(error)")
            self.muxer = nil
        }
    }

    private func take(resendHeaders: Bool, holdAll: Bool = false) {
        guard let muxer else { return }
        do {
            let output = try muxer.takeOutput(resendHeaders: resendHeaders)
            // Before a join point, what was held goes out: the next take starts a chunk.
            append(output, joinable: gatheringJoinable, flush: resendHeaders, holdAll: holdAll)
            gatheringJoinable = false
        } catch {
            logger.warning("SRT playback's muxer failed: \(error)")
            self.muxer = nil
        }
    }
}
