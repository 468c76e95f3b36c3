import LibAV
import Logging
import Media
import Metrics
import NIOCore

/// Cuts one rendition's frames into HLS segments: MPEG-TS for classic HLS and fMP4 parts
/// for LL-HLS, at the same keyframes so both variants share media sequence numbers.
///
/// A hub subscriber like any viewer. It lives on one event loop (libav muxers are not
/// thread-safe and copy-muxing costs microseconds per frame), drains its queue in
/// batches, and hands finished parts and segments to the `HLSRendition` actor through one
/// ordered stream of events.
final class HLSSegmenter {
    enum Event: Sendable {
        case describe(HLSRendition.Description)
        case initSection(Int, ByteBuffer)
        case beginSegment(sequence: Int, initSection: Int, discontinuity: Bool, programDateTime: Double)
        case part(HLSRendition.Part)
        /// The MPEG-TS bytes are nil for a rendition MPEG-TS cannot carry (AV1). `charged`:
        /// what the segment's frames were charged to the node's HLS budget.
        case completeSegment(duration: Double, transportStream: ByteBuffer?, charged: Int)
        /// The segmenter gave up on the open segment (`AbandonReason`): drop it.
        case abandonSegment(HLSRendition.AbandonReason)
        case end
    }

    private let configuration: HLSConfiguration
    private let events: AsyncStream<Event>.Continuation
    private var logger: Logger
    /// The rendition's share of the node's HLS budget: each frame of the open segment is
    /// charged as it is muxed (`cost(of:)`), and the charge goes with the segment to the
    /// window, or back to the budget when the segment is abandoned.
    let account: HLSByteBudget.Account

    private var videoConfiguration: MediaFrame?
    private var audioConfiguration: MediaFrame?
    private var configurationChanged = false
    /// A frame marked `isDiscontinuity` arrived (a new publisher, a re-based jump): the
    /// next cut point ends the open segment and starts one marked EXT-X-DISCONTINUITY.
    private var discontinuityPending = false
    private var transportStream: MemoryMuxer?
    private var fragmented: MemoryMuxer?
    private var hasVideo = false
    private var initSection = -1
    private var sequence = 0
    private var segmentStart: Int64?
    private var partStart: Int64?
    private var partIndependent = false
    private var partHasFrames = false
    private var lastTimestamp: Int64 = 0
    private var failed = false
    /// What the frames written into the open segment hold (see `openSegmentBytes`).
    private var segmentBytes = 0
    /// When an abandoned segment was last logged, and how many were abandoned since: a
    /// publisher that never sends keyframes would otherwise log one every few seconds.
    private var lastAbandonLog: ContinuousClock.Instant?
    private var abandonsSinceLog = 0
    static let abandonLogInterval: Duration = .seconds(60)

    init(configuration: HLSConfiguration, events: AsyncStream<Event>.Continuation, logger: Logger, account: HLSByteBudget.Account) {
        self.configuration = configuration
        self.events = events
        self.logger = logger
        self.account = account
    }

    /// The node's HLS budget had no room for a frame of the open segment.
    struct NodeBudgetSpent: Error {}

    /// Feeds a batch drained from the hub.
    func process(_ batch: FrameSubscription.Batch) {
        for frame in batch.frames {
            process(frame)
        }
        if batch.ended { finish() }
    }

    /// What the open segment holds, estimated from its frames: each payload is muxed
    /// twice, into the MPEG-TS muxer's buffer (taken when the segment completes) and into
    /// the fMP4 muxer (whose parts go to the rendition), plus `perFrameOverhead`. This
    /// bounds what a publisher can make us hold; it is not an exact account (TS packet
    /// headers, about 2 % of the payload, and moof headers are left out).
    var openSegmentBytes: Int { segmentBytes }

    /// What one frame adds beyond its payload: in MPEG-TS up to a packet (188 bytes) of
    /// padding, the PES header and an access unit delimiter; in fMP4 a sample entry.
    /// Counting it keeps a flood of tiny frames from holding many times what it is counted.
    static let perFrameOverhead = 256

    /// What writing `frame` adds to `openSegmentBytes`.
    private static func cost(of frame: MediaFrame) -> Int {
        2 * frame.payload.readableBytes + perFrameOverhead
    }

    /// Feeds one frame (batches go through here; tests feed frames directly).
    func process(_ frame: MediaFrame) {
        if frame.isSequenceHeader {
            accept(configuration: frame)
            return
        }
        guard frame.kind != .script, !failed else { return }
        do {
            try write(frame)
        } catch is NodeBudgetSpent {
            abandonOpenSegment(.nodeBudget, at: frame.timestamp, segmentStart: segmentStart ?? frame.timestamp)
        } catch {
            // One bad frame must not take HLS down for good: start over at the next keyframe.
            // The rendition drops the open segment's parts now, as their bytes go back to
            // the node's budget (`resetMuxers`).
            logger.warning("HLS segmenter reset: \(error)")
            if segmentStart != nil {
                HLSMetrics.abandonedSegment(reason: .muxerError)
                events.yield(.abandonSegment(.muxerError))
            }
            resetMuxers()
        }
    }

    private func accept(configuration frame: MediaFrame) {
        switch frame.kind {
        // A track whose configuration arrives only after the muxers opened without it (a
        // publisher that starts audio late) also needs a new init section: otherwise the
        // rendition would stay without that track.
        case .video:
            if videoConfiguration?.payload != frame.payload {
                configurationChanged = videoConfiguration != nil || fragmented != nil || configurationChanged
                videoConfiguration = frame
            }
        case .audio:
            if audioConfiguration?.payload != frame.payload {
                configurationChanged = audioConfiguration != nil || fragmented != nil || configurationChanged
                audioConfiguration = frame
            }
        case .script:
            break
        }
    }

    private func write(_ frame: MediaFrame) throws {
        let isCutPoint = videoConfiguration == nil ? frame.kind == .audio : (frame.kind == .video && frame.isKeyframe)
        if frame.isDiscontinuity, fragmented != nil { discontinuityPending = true }
        if configurationChanged, isCutPoint {
            // New codec parameters: close what we have, start a new init section.
            try closeSegment(at: frame.timestamp)
            resetMuxers()
            configurationChanged = false
            discontinuityPending = false
        } else if discontinuityPending, isCutPoint, segmentStart != nil {
            // The same parameters from a new publisher (or after a re-based jump): the
            // timeline runs on, but players learn that the media does not.
            try closeSegment(at: frame.timestamp)
            try beginSegment(at: frame.timestamp, discontinuity: true)
            discontinuityPending = false
            try append(frame, independent: true)
            return
        }
        if fragmented == nil {
            guard isCutPoint else { return }  // wait for a keyframe to start
            try openMuxers()
        }
        guard let start = segmentStart else {
            try beginSegment(at: frame.timestamp, discontinuity: sequence > 0)
            try append(frame, independent: isCutPoint)
            return
        }
        let exceeded = limitExceeded(adding: frame, segmentStart: start)
        if isCutPoint, exceeded != nil || frame.timestamp - start >= configuration.targetSegmentDuration.milliseconds {
            // A segment that would outgrow its bounds is cut early when it can be: a short
            // segment is valid, an abandoned one is a gap.
            try closeSegment(at: frame.timestamp)
            try beginSegment(at: frame.timestamp, discontinuity: false)
        } else if let exceeded {
            abandonOpenSegment(exceeded, at: frame.timestamp, segmentStart: start)
            return
        } else if let partBegan = partStart, partHasFrames, !hasVideo || frame.kind == .video,
                  frame.timestamp + 2 * frameStep - partBegan > configuration.partTargetDuration.milliseconds {
            // Close the part early enough that even a late next frame (one step of
            // headroom: encoders jitter, loops and drops leave gaps) keeps it within
            // PART-TARGET, which is a maximum (RFC 8216bis 4.4.3.7). Parts start on video
            // frames so that each one's first sample is video.
            try closePart(at: frame.timestamp)
            partStart = frame.timestamp
            partIndependent = isCutPoint
        }
        try append(frame, independent: isCutPoint)
    }

    /// The expected distance to the next frame that can start a part (video, or audio for
    /// audio-only streams): the smallest of the last eight steps, so that millisecond
    /// rounding (33/34 ms at 30 fps) and one-off gaps (a reconnect, a dropped frame) do not
    /// make parts close early.
    private var frameStep: Int64 { recentSteps.min() ?? 33 }
    private var recentSteps: [Int64] = []
    private var lastStepTimestamp: Int64?

    /// Whether writing `frame` would take the open segment past
    /// `HLSConfiguration.maxOpenSegmentBytes` or `maxOpenSegmentDuration`, and which.
    private func limitExceeded(adding frame: MediaFrame, segmentStart start: Int64) -> HLSRendition.AbandonReason? {
        if openSegmentBytes + Self.cost(of: frame) > configuration.maxOpenSegmentBytes {
            return .tooLarge
        }
        if frame.timestamp - start > configuration.maxOpenSegmentDuration.milliseconds {
            return .tooLong
        }
        return nil
    }

    /// Gives up on the open segment, which no keyframe ended in time or the node's HLS
    /// budget had no room for: the rendition drops its parts, and resetting the muxers frees what they buffered (the TS segment so far,
    /// the fMP4 part in progress). Like any reset, the next keyframe opens new muxers and
    /// a segment marked as a discontinuity (with a new init section); frames until then
    /// are skipped. Counted in `estuary_hls_segments_abandoned_total{reason}`.
    private func abandonOpenSegment(_ reason: HLSRendition.AbandonReason, at timestamp: Int64, segmentStart start: Int64) {
        HLSMetrics.abandonedSegment(reason: reason)
        abandonsSinceLog += 1
        let now = ContinuousClock().now
        if lastAbandonLog.map({ now - $0 >= Self.abandonLogInterval }) ?? true {
            let why = switch reason {
            case .tooLarge: "no keyframe within \(configuration.maxOpenSegmentBytes) bytes"
            case .tooLong: "no keyframe within \(configuration.maxOpenSegmentDuration)"
            case .nodeBudget: "the node's HLS budget (\(account.nodeLimit) bytes, hlsMaxBytes) is spent"
            case .muxerError: "a muxer failed"
            }
            logger.warning(
                "HLS segment abandoned (\(reason.rawValue)): \(why) (\(openSegmentBytes) bytes over \(timestamp - start) ms); waiting for the next keyframe; \(abandonsSinceLog) abandoned since the last report"
            )
            lastAbandonLog = now
            abandonsSinceLog = 0
        }
        events.yield(.abandonSegment(reason))
        resetMuxers()
    }

    private func append(_ frame: MediaFrame, independent: Bool) throws {
        if !hasVideo || frame.kind == .video {
            if let last = lastStepTimestamp, frame.timestamp > last {
                if recentSteps.count == 8 { recentSteps.removeFirst() }
                recentSteps.append(min(frame.timestamp - last, 1000))
            }
            lastStepTimestamp = frame.timestamp
        }
        let cost = Self.cost(of: frame)
        guard account.reserve(cost) else { throw NodeBudgetSpent() }
        if !partHasFrames { partIndependent = independent || partIndependent }
        segmentBytes += cost
        try transportStream?.write(frame)
        try fragmented?.write(frame)
        partHasFrames = true
        lastTimestamp = max(lastTimestamp, frame.timestamp)
    }

    private func openMuxers() throws {
        let video = try videoConfiguration.map { try VideoTrack(sequenceHeader: $0) }
        let audio = try audioConfiguration.map { try AudioTrack(sequenceHeader: $0) }
        hasVideo = video != nil
        // Each muxer buffers at most one segment's worth (TS) or one part's (fMP4) before
        // its output is taken, which the open-segment bound keeps to about half of
        // `maxOpenSegmentBytes`; the muxers' own bound (writes fail past it, and the
        // segmenter resets) is a backstop at twice that, not MemoryMuxer's default 64 MiB.
        let buffered = configuration.maxOpenSegmentBytes
        // AV1 has no MPEG-TS mapping FFmpeg 5.1 writes, and no HLS player reads Opus in
        // MPEG-TS: such a rendition is LL-HLS (fMP4) only, and the classic master leaves it
        // out (`Description.hasTransportStream`).
        let hasTransportStream = Self.hasTransportStream(video: video, audio: audio)
        transportStream = !hasTransportStream ? nil : try MemoryMuxer(container: .mpegTS, video: video, audio: audio, maximumBufferedBytes: buffered)
        let fragmented = try MemoryMuxer(container: .fragmentedMP4, video: video, audio: audio, maximumBufferedBytes: buffered)
        self.fragmented = fragmented
        initSection += 1
        events.yield(.initSection(initSection, fragmented.initializationSegment()))
        events.yield(.describe(describe(video: video, audio: audio)))
    }

    private func describe(video: VideoTrack?, audio: AudioTrack?) -> HLSRendition.Description {
        var description = HLSRendition.Description()
        description.hasTransportStream = Self.hasTransportStream(video: video, audio: audio)
        if let video {
            description.hasVideo = true
            description.codecs.append(video.codecString)
            description.width = video.width
            description.height = video.height
            description.frameRate = video.frameRate
        }
        if let audio {
            description.hasAudio = true
            description.audioChannels = audio.channelCount
            description.codecs.append(audio.codecString)
        }
        return description
    }

    /// Whether HLS players can read the rendition's tracks in MPEG-TS segments.
    private static func hasTransportStream(video: VideoTrack?, audio: AudioTrack?) -> Bool {
        video?.codec != .av1 && audio?.playsInHLSTransportStream != false
    }

    private func beginSegment(at timestamp: Int64, discontinuity: Bool) throws {
        segmentStart = timestamp
        account.release(segmentBytes)  // nothing: the segment before was closed or dropped
        segmentBytes = 0
        partStart = timestamp
        partHasFrames = false
        partIndependent = false
        events.yield(.beginSegment(sequence: sequence, initSection: initSection, discontinuity: discontinuity, programDateTime: Self.wallClock()))
    }

    private func closePart(at timestamp: Int64) throws {
        guard let fragmented, let partBegan = partStart, partHasFrames else { return }
        let data = try fragmented.flushFragment(endingAt: timestamp)
        events.yield(.part(HLSRendition.Part(duration: Double(timestamp - partBegan) / 1000, independent: partIndependent, data: data)))
        partHasFrames = false
        partIndependent = false
    }

    private func closeSegment(at timestamp: Int64) throws {
        guard let start = segmentStart else { return }
        try closePart(at: timestamp)
        let ts = try transportStream?.takeOutput()
        events.yield(.completeSegment(duration: Double(timestamp - start) / 1000, transportStream: ts, charged: segmentBytes))
        segmentBytes = 0
        sequence += 1
        segmentStart = nil
        partStart = nil
    }

    private func resetMuxers() {
        transportStream = nil
        fragmented = nil
        // The open segment's frames go with it (the rendition drops its parts).
        account.release(segmentBytes)
        segmentBytes = 0
        if segmentStart != nil {
            // The open segment cannot be completed consistently; the next one is a discontinuity.
            segmentStart = nil
            partStart = nil
            sequence += 1
        }
    }

    private func finish() {
        if segmentStart != nil {
            try? closeSegment(at: lastTimestamp + 1)
        }
        transportStream = nil
        fragmented = nil
        account.release(segmentBytes)
        segmentBytes = 0
        events.yield(.end)
        events.finish()
    }

    static func wallClock() -> Double {
        WallClock.now()
    }
}

@available(*, unavailable)
extension HLSSegmenter: Sendable {}

/// Counters of HLS segmenting. Labels have bounded cardinality (no stream names).
enum HLSMetrics {
    /// Open segments dropped: no keyframe ended them within their bounds, the node's HLS
    /// budget had no room, or a muxer failed.
    static func abandonedSegment(reason: HLSRendition.AbandonReason) {
        Counter(label: "estuary_hls_segments_abandoned_total", dimensions: [("reason", reason.rawValue)]).increment()
    }

    private static let bytesGauge = Gauge(label: "estuary_hls_bytes")
    private static let endedDropped = Counter(label: "estuary_hls_ended_renditions_dropped_total")
    private static let windowsTrimmed = Counter(label: "estuary_hls_windows_trimmed_total")

    /// What a relief of the node's HLS budget did (`HLSService.relievePressure`).
    static func relieved(endedRenditions: Int, trimmedWindows: Int) {
        endedDropped.increment(by: endedRenditions)
        windowsTrimmed.increment(by: trimmedWindows)
    }

    /// The node's HLS bytes (`HLSByteBudget`), recorded as windows change.
    static func bytesHeld(_ bytes: Int) {
        bytesGauge.record(bytes)
    }
}
