import Dispatch
import LibAV
import Logging
import Media
import NIOCore

/// One stream's MPEG-TS for SRT players, muxed once however many watch: a subscription to
/// the hub's frames, libavformat's `mpegts` muxer (`MemoryMuxer`) on a serial queue of its
/// own, and the ring (`TSChunkRing`) the players' threads read.
///
/// Each batch the hub hands over is muxed and taken as one chunk, so a frame reaches the
/// players as soon as it reaches the hub. Before each keyframe the output so far is taken
/// and the tables armed, so the keyframe's chunk starts with PAT and PMT: a player joins
/// there. New codec parameters open a new muxer at the next keyframe.
final class TSFeed: Sendable {
    let hub: StreamHub
    let ring: TSChunkRing
    private let subscription: FrameSubscription

    /// Subscribes to `hub`; nil when the hub has ended.
    init?(hub: StreamHub, maxBytes: Int, logger: Logger) {
        let ring = TSChunkRing(maxBytes: maxBytes, maxChunks: 4096)
        let queue = DispatchQueue(label: "estuary.srt.ts-feed")
        let muxing = TSFeedMuxing(ring: ring, logger: logger)
        // The hub's byte bound applies until the queue drains: a muxer that falls behind
        // costs its players frames (to the next keyframe), never memory.
        guard let subscription = FrameSubscription.start(on: hub, delivery: .wake { drain in
            queue.async { muxing.process(drain()) }
        }, keepsStreamOpen: true) else { return nil }
        self.hub = hub
        self.ring = ring
        self.subscription = subscription
    }

    /// The last player left: no more muxing. Players still reading see the end.
    func stop() {
        subscription.cancel()
        ring.end()
    }
}

/// The muxing side of a `TSFeed`. Only ever used on the feed's serial queue, one batch
/// after another, hence `@unchecked Sendable`: the wake-up closure that carries it there is
/// called on the publisher's thread.
private final class TSFeedMuxing: @unchecked Sendable {
    private let ring: TSChunkRing
    private let logger: Logger
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

    init(ring: TSChunkRing, logger: Logger) {
        self.ring = ring
        self.logger = logger
    }

    func process(_ batch: FrameSubscription.Batch) {
        for frame in batch.frames {
            process(frame)
        }
        take(resendHeaders: false)
        if batch.ended {
            if let muxer, let rest = try? muxer.finish() { ring.append(rest, joinable: false) }
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
            if let muxer, let rest = try? muxer.finish() { ring.append(rest, joinable: gatheringJoinable) }
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

    private func take(resendHeaders: Bool) {
        guard let muxer else { return }
        do {
            let output = try muxer.takeOutput(resendHeaders: resendHeaders)
            ring.append(output, joinable: gatheringJoinable)
            gatheringJoinable = false
        } catch {
            logger.warning("SRT playback's muxer failed: \(error)")
            self.muxer = nil
        }
    }
}
