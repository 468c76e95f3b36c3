import LibAV
import Logging
import Media
import NIOCore
import Synchronization

/// The worker-thread side of a pipeline: owns the decoder and the rungs.
///
/// **Threads.** The pipeline's thread decodes, re-encodes audio and decides; each
/// rendition has its own `SerialWorker` thread that scales and encodes its rung and
/// publishes into its hub. Decoded pictures are handed to every rung's worker by reference
/// (no pixel copy), so the rungs encode in parallel with each other and with the decoding
/// of the next frames. Everything that touches a rendition's output (interleaver, hub,
/// encoder) runs on that rendition's worker, in submission order; the pipeline's thread
/// only submits. A rung's worker queue is bounded, so a slow rung holds the pipeline
/// thread back and the inbox's lag policy sheds the load. Not Sendable.
final class TranscodeJob {
    /// One rung's scaler and encoder: created on the pipeline thread, then used only on
    /// its output's worker. What the pipeline thread reads (statistics) is a snapshot
    /// behind a lock.
    final class Rung {
        struct Counters: Sendable {
            var encoder = VideoEncoder.Statistics()
            /// Encoder errors on this rung (the frame is lost to this rung only).
            var errors = 0
        }

        let plan: RungPlan
        let output: Output
        private let scaler: Scaler
        private let encoder: VideoEncoder
        private let counters = Mutex(Counters())

        init(plan: RungPlan, scaler: Scaler, encoder: VideoEncoder, output: Output) {
            self.plan = plan
            self.scaler = scaler
            self.encoder = encoder
            self.output = output
        }

        /// Lowers the rung's bit rate from its next picture (on its worker, which owns the
        /// encoder).
        func limitBitRate(to bitRate: Int) {
            output.worker.submit { self.encoder.limitBitRate(to: bitRate) }
        }

        var snapshot: Counters { counters.withLock { $0 } }

        /// Queues the picture for this rung (pipeline thread); blocks while the rung's
        /// queue is full.
        func submit(_ picture: VideoFrame, source: StreamPath, logger: Logger) {
            output.worker.submit { self.encode(picture, source: source, logger: logger) }
        }

        /// Encodes what the encoder still holds and waits until it is published.
        func drain(source: StreamPath, logger: Logger) {
            output.worker.sync {
                do {
                    for frame in try self.encoder.flush() {
                        self.output.publishVideo(frame)
                    }
                } catch {
                    logger.error("flushing the encoder failed", metadata: ["stream": "\(source)", "rung": "\(self.plan.rung.name)", "error": "\(error)"])
                }
                self.updateCounters(error: false)
            }
        }

        /// Scales and encodes one picture and publishes what comes out (worker).
        private func encode(_ picture: VideoFrame, source: StreamPath, logger: Logger) {
            guard encoder.admit(presentationTime: picture.presentationTime, isSourceKeyframe: picture.isSourceKeyframe) else {
                updateCounters(error: false)
                return
            }
            do {
                for frame in try encoder.encode(try scaler.scale(picture)) {
                    output.publishVideo(frame)
                }
                updateCounters(error: false)
            } catch {
                let errors = updateCounters(error: true)
                if errors == 1 || errors % 100 == 0 {
                    logger.error("encoding failed", metadata: [
                        "stream": "\(source)", "rung": "\(plan.rung.name)", "error": "\(error)", "errors": "\(errors)",
                    ])
                }
            }
        }

        @discardableResult
        private func updateCounters(error: Bool) -> Int {
            let statistics = encoder.statistics
            return counters.withLock { counters in
                counters.encoder = statistics
                if error { counters.errors += 1 }
                return counters.errors
            }
        }
    }

    /// The hubs' publisher id: one publishing session per rendition hub.
    static let publisherID: StreamHub.PublisherID = 1

    private let source: StreamPath
    private let configuration: TranscodePipeline.Configuration
    private let serializers: [any FrameSerializer]
    private let logger: Logger
    private let onRendition: @Sendable (TranscodePipeline.Rendition) -> Void
    private let encodeStart: TranscodePipeline.EncodeStart

    private var decoder: VideoDecoder?
    private var videoSequenceHeader: ByteBuffer?
    /// When the latest reconfigurations happened (at most `maximumReconfigurations`).
    private var recentReconfigurations: [ContinuousClock.Instant] = []
    private var audioSequenceHeader: MediaFrame?
    private var rungs: [Rung] = []
    private let audio: AudioTranscoder
    /// Audio tags whose header does not parse.
    private var unsupportedAudioTags = 0
    private var outputs: [String: Output] = [:]
    /// The latest picture size of each rung, for the statistics.
    private var rungSizes: [String: (width: Int, height: Int)] = [:]
    /// The source's video since its configuration: bytes and first and last timestamps, until
    /// `sourceBitRateWindow` of it gives its bit rate (`capRungsAtSourceBitRate`).
    private var sourceVideo: (bytes: Int, first: Int64, last: Int64)?
    private var sourceBitRateMeasured = false
    /// How much source video measures its bit rate: two GOPs of the usual 2 s.
    static let sourceBitRateWindow: Int64 = 4000
    private(set) var statistics = TranscodeStatistics()
    /// Decoder statistics of decoders already replaced.
    private var previousDecoders = VideoDecoder.Statistics()
    /// Encoder statistics of encoders already replaced, by rung name.
    private var previousEncoders: [String: VideoEncoder.Statistics] = [:]

    init(
        source: StreamPath,
        configuration: TranscodePipeline.Configuration,
        serializers: [any FrameSerializer],
        logger: Logger,
        encodeStart: TranscodePipeline.EncodeStart = .init(),
        onRendition: @escaping @Sendable (TranscodePipeline.Rendition) -> Void
    ) {
        self.encodeStart = encodeStart
        self.source = source
        self.configuration = configuration
        self.serializers = serializers
        self.logger = logger
        self.onRendition = onRendition
        self.audio = AudioTranscoder(bitRatePerChannel: configuration.audioBitRatePerChannel, logger: logger)
    }

    // MARK: - Input

    /// Processes a batch of source frames. Each rung wakes its hub's subscribers as it
    /// publishes every picture; at the end of the batch they are woken for audio published
    /// since.
    func process(_ frames: [MediaFrame]) {
        for frame in frames {
            statistics.framesIn += 1
            switch frame.kind {
            case .script:
                // The source's onMetaData describes the source picture, not a rendition's.
                continue
            case .audio:
                handleAudio(frame)
            case .video:
                if frame.isSequenceHeader {
                    configure(frame)
                } else {
                    handleVideo(frame)
                }
            }
        }
        for output in outputs.values {
            output.submitFlush()
        }
        refreshStatistics()
    }

    /// End of input: drains the decoder, encoders and interleavers, then ends the hubs.
    func finish() {
        drainPipeline()
        publishAudio(audio.flush())
        for output in outputs.values {
            output.end()
        }
        refreshStatistics()
    }

    private func handleAudio(_ frame: MediaFrame) {
        guard let header = try? frame.audioTagHeader() else {
            unsupportedAudioTags += 1
            return
        }
        guard header.codec == .aac else {
            // Anything else is re-encoded once, for every rung: HLS and players want AAC.
            publishAudio(audio.transcode(frame, header: header))
            return
        }
        publishAudio([frame])
    }

    private func publishAudio(_ frames: [MediaFrame]) {
        for frame in frames {
            if frame.isSequenceHeader {
                audioSequenceHeader = frame
            }
            for output in outputs.values {
                output.submitAudio(frame)
            }
        }
    }

    private func handleVideo(_ frame: MediaFrame) {
        guard let decoder else {
            statistics.framesBeforeConfiguration += 1
            return
        }
        measureSourceBitRate(frame)
        do {
            let pictures = try decoder.decode(frame)
            encode(pictures)
        } catch {
            // Counted by the decoder; the stream goes on from the next frame.
            let corrupt = previousDecoders.corruptFrames + decoder.statistics.corruptFrames
            if corrupt == 1 || corrupt % 100 == 0 {
                logger.warning("skipping corrupt video frame", metadata: [
                    "stream": "\(source)", "timestamp": "\(frame.timestamp)", "error": "\(error)", "corrupt_total": "\(corrupt)",
                ])
            }
        }
    }

    /// A rung's bit rate above the source's only spends bits on the source's own artefacts
    /// (a 360p source at 0.79 Mbit/s came out as a 360p rung at 1.0 Mbit/s). Once
    /// `sourceBitRateWindow` of the source's video is measured, every rung configured above
    /// the source's bit rate is lowered to it (x264 is reconfigured between pictures; the
    /// rung's first seconds keep the ladder's rate). Measured rather than read from the
    /// source's metadata, which not every encoder sends.
    private func measureSourceBitRate(_ frame: MediaFrame) {
        guard !sourceBitRateMeasured else { return }
        let bytes = frame.payload.readableBytes
        guard var measured = sourceVideo else {
            sourceVideo = (bytes, frame.timestamp, frame.timestamp)
            return
        }
        measured.bytes += bytes
        measured.last = max(measured.last, frame.timestamp)
        sourceVideo = measured
        let span = measured.last - measured.first
        guard span >= Self.sourceBitRateWindow else { return }
        sourceBitRateMeasured = true
        let sourceBitRate = Int(Int64(measured.bytes) * 8 * 1000 / span)
        for rung in rungs where rung.plan.rung.videoBitRate > sourceBitRate {
            rung.limitBitRate(to: sourceBitRate)
            logger.info("a rung above the source's bit rate is capped at it", metadata: [
                "stream": "\(source)", "rung": "\(rung.plan.rung.name)",
                "ladder_bit_rate": "\(rung.plan.rung.videoBitRate)", "source_bit_rate": "\(sourceBitRate)",
            ])
        }
    }

    // MARK: - Configuration

    /// A video sequence header: (re)opens the decoder and the rungs for its picture size.
    /// An identical header (a reconnecting encoder) changes nothing.
    private func configure(_ header: MediaFrame) {
        if let videoSequenceHeader, videoSequenceHeader == header.payload {
            return
        }
        guard admit(header) else { return }
        if decoder != nil {
            statistics.reconfigurations += 1
            drainPipeline()
        }
        videoSequenceHeader = header.payload
        rungs = []
        sourceVideo = nil
        sourceBitRateMeasured = false
        if let decoder {
            add(decoder.statistics, to: &previousDecoders)
        }
        decoder = nil
        let newDecoder: VideoDecoder
        do {
            newDecoder = try VideoDecoder(sequenceHeader: header)
        } catch {
            statistics.invalidSequenceHeaders += 1
            logger.error("cannot decode the source video", metadata: ["stream": "\(source)", "error": "\(error)"])
            return
        }
        decoder = newDecoder
        let track = newDecoder.track
        let frameRate = track.frameRate.flatMap { $0 > 0 && $0 <= 240 ? $0 : nil } ?? configuration.defaultFrameRate
        let plans = configuration.ladder.plan(sourceWidth: track.width, sourceHeight: track.height)
        logger.info("transcoding", metadata: [
            "stream": "\(source)", "source": "\(track.width)x\(track.height)@\(frameRate)",
            "rungs": "\(plans.map { "\($0.rung.name) \($0.width)x\($0.height)" })",
        ])
        var names = Set<String>()
        for plan in plans {
            var settings = VideoEncoder.Settings(
                width: plan.width,
                height: plan.height,
                bitRate: plan.rung.videoBitRate,
                frameRate: frameRate,
                maximumFrameRate: plan.rung.maximumFrameRate
            )
            settings.threadCount = configuration.encoderThreads
            settings.preset = configuration.preset
            do {
                let scaler = try Scaler(width: plan.width, height: plan.height, algorithm: configuration.scaling)
                let encoder = try VideoEncoder(settings: settings)
                guard let output = output(for: plan) else { continue }
                names.insert(plan.rung.name)
                if output.decoderConfiguration != encoder.decoderConfiguration {
                    output.decoderConfiguration = encoder.decoderConfiguration
                    // The rung's own description first, then its configuration.
                    output.submit([RenditionMetadata.frame(
                        width: plan.width,
                        height: plan.height,
                        frameRate: min(frameRate, plan.rung.maximumFrameRate ?? .infinity),
                        videoBitRate: plan.rung.videoBitRate,
                        audio: RenditionMetadata.audioConfiguration(of: audioSequenceHeader),
                        audioBitRate: audio.encoder?.settings.bitRate,
                        timestamp: header.timestamp
                    )])
                    output.submitVideo(encoder.sequenceHeader(timestamp: header.timestamp))
                }
                rungs.append(Rung(plan: plan, scaler: scaler, encoder: encoder, output: output))
                rungSizes[plan.rung.name] = (plan.width, plan.height)
            } catch {
                logger.error("cannot open rung", metadata: ["stream": "\(source)", "rung": "\(plan.rung.name)", "error": "\(error)"])
            }
        }
        // Rungs the new source size no longer has (it became smaller): their streams end.
        for (name, output) in outputs where !names.contains(name) {
            output.end()
            outputs[name] = nil
        }
    }

    /// Refuses a sequence header whose picture is over the size limits (checked from the
    /// SPS before a decoder is opened) or that comes in a reconfiguration storm. The
    /// refusal is per stream: logged, counted, and the stream keeps its current rungs.
    private func admit(_ header: MediaFrame) -> Bool {
        if let track = try? VideoTrack(sequenceHeader: header) {
            let tooLarge = track.width > configuration.maximumDimension || track.height > configuration.maximumDimension
                || track.width * track.height > configuration.maximumPixels
            if tooLarge {
                refuse(header, reason: "dimensions", "source picture \(track.width)x\(track.height) is over the limit (\(configuration.maximumDimension) a side, \(configuration.maximumPixels) pixels)")
                return false
            }
        }
        guard decoder != nil else { return true }
        let now = ContinuousClock.now
        recentReconfigurations.removeAll { now - $0 > configuration.reconfigurationWindow }
        guard recentReconfigurations.count < configuration.maximumReconfigurations else {
            refuse(header, reason: "reconfiguration_storm", "more than \(configuration.maximumReconfigurations) new sequence headers within \(configuration.reconfigurationWindow)")
            return false
        }
        recentReconfigurations.append(now)
        return true
    }

    private func refuse(_ header: MediaFrame, reason: String, _ why: String) {
        statistics.refusedSequenceHeaders += 1
        TranscodeMetrics.refusedSequenceHeaders(reason: reason)
        if statistics.refusedSequenceHeaders == 1 || statistics.refusedSequenceHeaders % 100 == 0 {
            logger.error("refusing a video sequence header", metadata: ["stream": "\(source)", "reason": "\(why)", "refused_total": "\(statistics.refusedSequenceHeaders)"])
        }
    }

    /// The rendition's output, created (hub, publisher, callback, audio header) on first use.
    private func output(for plan: RungPlan) -> Output? {
        if let existing = outputs[plan.rung.name] {
            return existing
        }
        let path: RenditionPath
        do {
            path = try RenditionPath(stream: source, rendition: plan.rung.name)
        } catch {
            logger.error("invalid rendition name", metadata: ["stream": "\(source)", "rung": "\(plan.rung.name)"])
            return nil
        }
        // A rendition keeps the source's timeline exactly: its input is already normalised,
        // and a gap where frames were dropped for lag must not shift it against the others.
        var hubConfiguration = configuration.hubConfiguration
        hubConfiguration.timestampJumpThreshold = nil
        let hub = StreamHub(path: path, serializers: serializers, configuration: hubConfiguration)
        guard case .attached = hub.attachPublisher(id: Self.publisherID, owner: "transcoder", evict: {}) else {
            return nil
        }
        let worker: SerialWorker
        do {
            worker = try SerialWorker(name: "transcode-rung", capacity: configuration.rungQueueCapacity)
        } catch {
            logger.error("cannot start the rung's thread", metadata: ["stream": "\(source)", "rung": "\(plan.rung.name)", "error": "\(error)"])
            return nil
        }
        let output = Output(name: plan.rung.name, hub: hub, interleaver: Interleaver(maximumAudioLead: configuration.maximumAudioLead), worker: worker)
        outputs[plan.rung.name] = output
        onRendition(TranscodePipeline.Rendition(plan: plan, hub: hub))
        if let audioSequenceHeader {
            output.submitAudio(audioSequenceHeader)
        }
        return output
    }

    // MARK: - Encoding

    /// Hands each picture to every rung's worker (the same reference to all of them).
    private func encode(_ pictures: [VideoFrame]) {
        let start = encodeStart.value
        for picture in pictures where picture.presentationTime >= start {
            for rung in rungs {
                rung.submit(picture, source: source, logger: logger)
            }
        }
    }

    /// Pictures still in the decoder, then frames still in the encoders, go out; the
    /// encoders are done afterwards (their statistics are kept).
    private func drainPipeline() {
        if let decoder {
            encode(decoder.flush())
        }
        for rung in rungs {
            rung.drain(source: source, logger: logger)
            var total = previousEncoders[rung.plan.rung.name] ?? .init()
            add(rung.snapshot.encoder, to: &total)
            previousEncoders[rung.plan.rung.name] = total
        }
        rungs = []
    }

    private func refreshStatistics() {
        var decoderTotal = previousDecoders
        if let decoder {
            add(decoder.statistics, to: &decoderTotal)
        }
        statistics.decodedPictures = decoderTotal.decodedFrames
        statistics.corruptFrames = decoderTotal.corruptFrames
        statistics.concealedPictures = decoderTotal.concealedFrames
        var renditions: [String: RenditionStatistics] = [:]
        for (name, encoder) in previousEncoders {
            var rendition = RenditionStatistics(encoder: encoder)
            rendition.width = rungSizes[name]?.width ?? 0
            rendition.height = rungSizes[name]?.height ?? 0
            renditions[name] = rendition
        }
        for rung in rungs {
            let snapshot = rung.snapshot
            var total = previousEncoders[rung.plan.rung.name] ?? .init()
            add(snapshot.encoder, to: &total)
            var rendition = RenditionStatistics(encoder: total)
            rendition.width = rung.plan.width
            rendition.height = rung.plan.height
            rendition.encodeErrors = snapshot.errors
            renditions[rung.plan.rung.name] = rendition
        }
        statistics.renditions = renditions
        statistics.producing = rungs.map(\.plan.rung.name)
        statistics.audioFramesReencoded = audio.statistics.framesIn
        statistics.audioFramesOut = audio.statistics.framesOut
        statistics.corruptAudioFrames = audio.statistics.corruptFrames
        statistics.unsupportedAudioFrames = unsupportedAudioTags + audio.statistics.unsupportedFrames
    }

    private func add(_ statistics: VideoDecoder.Statistics, to total: inout VideoDecoder.Statistics) {
        total.packets += statistics.packets
        total.decodedFrames += statistics.decodedFrames
        total.corruptFrames += statistics.corruptFrames
        total.concealedFrames += statistics.concealedFrames
        total.receiveErrors += statistics.receiveErrors
    }

    private func add(_ statistics: VideoEncoder.Statistics, to total: inout VideoEncoder.Statistics) {
        total.framesEncoded += statistics.framesEncoded
        total.keyframes += statistics.keyframes
        total.droppedByFrameRateCap += statistics.droppedByFrameRateCap
        total.droppedOutOfOrder += statistics.droppedOutOfOrder
        total.bytesOut += statistics.bytesOut
    }
}

@available(*, unavailable)
extension TranscodeJob: Sendable {}
