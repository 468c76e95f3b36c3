import Foundation
import LibAV
import Logging
import Media
import Synchronization

/// What a pipeline has done so far. A snapshot, refreshed after every batch of input.
public struct TranscodeStatistics: Sendable, Equatable {
    /// Source frames taken from the queue and processed.
    public var framesIn = 0
    /// Source frames dropped because the worker was behind (the `transcode_lag` metric).
    public var lagDroppedFrames = 0
    /// Source pictures decoded (each is scaled and encoded once per rung).
    public var decodedPictures = 0
    /// Coded source frames skipped as corrupt (malformed NAL framing, rejected by libavcodec).
    public var corruptFrames = 0
    /// Pictures decoded with concealed errors.
    public var concealedPictures = 0
    /// Source video frames before a usable video sequence header.
    public var framesBeforeConfiguration = 0
    /// Video sequence headers that could not be opened.
    public var invalidSequenceHeaders = 0
    /// New video configurations after the first (resolution changes).
    public var reconfigurations = 0
    /// Sequence headers refused: dimensions over the limits, or a reconfiguration storm.
    public var refusedSequenceHeaders = 0
    /// Audio tags left out: unparseable headers, or formats no decoder exists for.
    public var unsupportedAudioFrames = 0
    /// Non-AAC source audio frames taken for re-encoding to AAC.
    public var audioFramesReencoded = 0
    /// AAC frames (and sequence headers) the re-encoder produced.
    public var audioFramesOut = 0
    /// Non-AAC source audio frames that could not be decoded (skipped).
    public var corruptAudioFrames = 0
    /// Seconds the worker spent processing frames (not waiting for them).
    public var busySeconds = 0.0
    /// How far (in media seconds) the output trails the input: the newest source timestamp
    /// offered minus the last one processed, after the latest batch. The
    /// `estuary_transcode_lag_seconds` gauge.
    public var lagSeconds = 0.0
    /// Per rendition, by rung name.
    public var renditions: [String: RenditionStatistics] = [:]
    /// The rungs encoded now, for the source's current picture (rungs above it are skipped;
    /// `renditions` also keeps those a shrinking source ended). Empty until the source's
    /// first video configuration.
    public var producing: [String] = []

    public init() {}
}

public struct RenditionStatistics: Sendable, Equatable {
    public var width = 0
    public var height = 0
    public var framesEncoded = 0
    public var keyframes = 0
    public var droppedByFrameRateCap = 0
    public var droppedOutOfOrder = 0
    public var encodeErrors = 0
    /// Bytes of coded video (FLV tag bodies) produced.
    public var bytesOut = 0

    init(encoder: VideoEncoder.Statistics) {
        framesEncoded = encoder.framesEncoded
        keyframes = encoder.keyframes
        droppedByFrameRateCap = encoder.droppedByFrameRateCap
        droppedOutOfOrder = encoder.droppedOutOfOrder
        bytesOut = encoder.bytesOut
    }
}

/// Transcodes one source stream into the renditions of a ladder, each published into its
/// own `StreamHub` (`<app>/<name>_<rung>`).
///
/// The source is decoded once; each rung scales that picture (libswscale) and encodes it
/// with libx264 (see `VideoEncoder`: veryfast, zerolatency, VBV, no B-frames). Every
/// rung's keyframes are forced at the source's keyframe PTS, so renditions' GOPs line up.
/// AAC audio is copied unchanged into every rendition (other audio is re-encoded to AAC once,
/// see `AudioTranscoder`), interleaved by timestamp with the
/// rendition's video. Video sequence headers (re)configure the pipeline: a new picture
/// size reopens decoder and encoders while the renditions' hubs, and their viewers, stay.
///
/// **Threading.** All libav work runs on one dedicated thread per pipeline (libx264 adds
/// its own slice threads), never on Swift's cooperative pool or an event loop. `submit`
/// never blocks: frames go into a bounded queue (`Configuration.queueCapacity` coded
/// video frames) whose overflow policy drops whole GOP tails and counts them in
/// `statistics.lagDroppedFrames`. Renditions' hubs are created on the worker thread when
/// the first video sequence header arrives; `onRendition` is called there, before any
/// frame is published into the new hub.
public final class TranscodePipeline: Sendable {
    public struct Configuration: Sendable {
        public var ladder: Ladder = .default
        /// Coded video frames the queue holds before frames are dropped: 60 is two
        /// seconds of 30 fps input.
        public var queueCapacity = 60
        public var scaling: Scaler.Algorithm = .bicubic
        /// x264 preset.
        public var preset = "veryfast"
        /// libx264 threads per rung; 0 lets x264 choose.
        public var encoderThreads = 0
        /// Jobs (pictures, audio, flushes) queued for one rung's thread before the
        /// pipeline thread waits for it.
        public var rungQueueCapacity = 4
        /// Frame rate assumed for rate control when the source SPS has no timing info.
        public var defaultFrameRate = 30.0
        /// How far (ms) copied audio may run ahead of a rendition's video before it is
        /// published anyway.
        public var maximumAudioLead: Int64 = 1000
        /// AAC bit rate per channel when the source's audio is re-encoded (not AAC).
        public var audioBitRatePerChannel = 64_000
        public var hubConfiguration = HubConfiguration()
        /// The largest source picture decoded, in either direction and in pixels: a sequence
        /// header announcing more is refused before any decoder or buffer is made for it
        /// (an SPS may claim 65535x65535). 8192 and 8K UHD's pixel count.
        public var maximumDimension = 8192
        public var maximumPixels = 7680 * 4320
        /// Reconfigurations (a new video sequence header) allowed within
        /// `reconfigurationWindow`; more are refused until the window moves on. An encoder
        /// changes resolution a few times an hour at most; each reconfiguration reopens the
        /// decoder and every rung's encoder.
        public var maximumReconfigurations = 5
        public var reconfigurationWindow: Duration = .seconds(10)

        public init(ladder: Ladder = .default) {
            self.ladder = ladder
        }
    }

    /// A rendition hub as it is created.
    public struct Rendition: Sendable {
        public var plan: RungPlan
        public var hub: StreamHub
        /// The hub's publisher: the pipeline.
        public var publisherID: StreamHub.PublisherID { TranscodeJob.publisherID }
    }

    private struct Shared {
        var statistics = TranscodeStatistics()
        var finished = false
        var waiters: [CheckedContinuation<TranscodeStatistics, Never>] = []
    }

    public let source: StreamPath
    public let configuration: Configuration
    private let inbox: TranscodeInbox
    private let shared = Mutex(Shared())
    /// Pictures before this presentation time are decoded but not encoded (`encode(from:)`).
    private let encodeStart = EncodeStart()

    /// Where a job that joins a live stream starts encoding, shared with its worker thread.
    final class EncodeStart: Sendable {
        private let timestamp = Atomic<Int64>(.min)
        var value: Int64 { timestamp.load(ordering: .relaxed) }
        func set(_ value: Int64) { timestamp.store(value, ordering: .relaxed) }
    }

    /// Starts the pipeline's worker thread.
    ///
    /// - Parameters:
    ///   - source: the source stream; renditions are `source.app/source.name_<rung>`.
    ///   - serializers: the serializers every rendition hub is built with (the same as
    ///     the node's other hubs, so viewers of any format can play a rendition).
    ///   - onRendition: called on the worker thread for each new rendition hub.
    /// - Throws: when the thread cannot be created.
    public init(
        source: StreamPath,
        configuration: Configuration = .init(),
        serializers: [any FrameSerializer],
        logger: Logger,
        onRendition: @escaping @Sendable (Rendition) -> Void = { _ in }
    ) throws {
        self.source = source
        self.configuration = configuration
        self.inbox = TranscodeInbox(capacity: configuration.queueCapacity)
        let inbox = self.inbox
        let encodeStart = self.encodeStart
        try WorkerThread.start(name: "transcode") { [self] in
            let metrics = TranscodeMetrics(stream: source)
            let job = TranscodeJob(
                source: source,
                configuration: configuration,
                serializers: serializers,
                logger: logger,
                encodeStart: encodeStart,
                onRendition: onRendition
            )
            let clock = ContinuousClock()
            var busy = Duration.zero
            while true {
                let (frames, ended) = inbox.waitForFrames()
                let start = clock.now
                job.process(frames)
                if ended {
                    job.finish()
                }
                busy += clock.now - start
                var statistics = job.statistics
                statistics.lagDroppedFrames = inbox.lagDroppedFrames
                statistics.busySeconds = Double(busy.components.seconds) + Double(busy.components.attoseconds) / 1e18
                // Media time between the newest frame offered and the last one processed.
                if let newest = inbox.newestTimestamp, let processed = frames.last?.timestamp {
                    statistics.lagSeconds = Double(max(0, newest - processed)) / 1000
                }
                metrics.update(statistics)
                if ended {
                    metrics.finish()
                }
                if ended {
                    let waiters = shared.withLock { shared in
                        shared.statistics = statistics
                        shared.finished = true
                        defer { shared.waiters.removeAll() }
                        return shared.waiters
                    }
                    for waiter in waiters {
                        waiter.resume(returning: statistics)
                    }
                    return
                }
                shared.withLock { $0.statistics = statistics }
            }
        }
    }

    /// Starts encoding at the live edge: pictures presented before `timestamp` (ms) are
    /// decoded, as references for what follows, but not encoded. A job that joins a stream
    /// already live (a transcoder taking over a moved job) first gets the cached GOP: encoding
    /// all of it took a few hundred milliseconds of catch-up, and its pictures are older than
    /// what relays already hold, so they dropped its keyframe and passed P-frames that
    /// referred to it. From the live edge, the first picture out is a keyframe newer than
    /// anything viewers have. Call before submitting the frames it concerns.
    public func encode(from timestamp: Int64) {
        encodeStart.set(timestamp)
    }

    /// Offers a source frame (any kind, in the source's order). Never blocks. Returns
    /// false when the frame was dropped: the worker is behind (see the type's lag policy)
    /// or the pipeline is finishing.
    @discardableResult
    public func submit(_ frame: MediaFrame) -> Bool {
        inbox.offer(frame)
    }

    /// Ends the input: queued frames are processed, decoder and encoders drained, the
    /// rendition hubs ended. Returns the final statistics once the worker has stopped.
    public func finish() async -> TranscodeStatistics {
        inbox.end()
        return await withCheckedContinuation { continuation in
            let statistics: TranscodeStatistics? = shared.withLock { shared in
                guard shared.finished else {
                    shared.waiters.append(continuation)
                    return nil
                }
                return shared.statistics
            }
            if let statistics {
                continuation.resume(returning: statistics)
            }
        }
    }

    /// The latest statistics snapshot (lag drops are live).
    public var statistics: TranscodeStatistics {
        var statistics = shared.withLock { $0.statistics }
        statistics.lagDroppedFrames = inbox.lagDroppedFrames
        return statistics
    }
}
