import LibAV
import Logging
import Media
import NIOCore

/// The worker-thread side of a pipeline: owns the decoder and each rung's scaler and
/// encoder (every libav object of the job), created, used and freed on the worker thread.
/// Not Sendable.
final class TranscodeJob {
    /// Where one rung's frames go: its hub, publisher identity and interleaver. Outlives
    /// encoder reconfigurations, so viewers of a rendition stay attached when the source
    /// changes resolution.
    final class Output {
        let name: String
        let hub: StreamHub
        var interleaver: Interleaver
        /// The avcC last published, so an unchanged one is not sent again.
        var decoderConfiguration: ByteBuffer?
        var dirty = false

        init(name: String, hub: StreamHub, interleaver: Interleaver) {
            self.name = name
            self.hub = hub
            self.interleaver = interleaver
        }

        func publish(_ frames: [MediaFrame]) {
            for frame in frames {
                hub.publish(frame, publisher: TranscodeJob.publisherID)
                dirty = true
            }
        }
    }

    /// One rung's encoding state. A class so that a helper thread can work on one rung
    /// while the job thread works on another (see `encode`).
    final class Rung {
        let plan: RungPlan
        let scaler: Scaler
        let encoder: VideoEncoder
        let output: Output
        /// Encoder errors on this rung (the frame is lost to this rung only).
        var errors = 0

        init(plan: RungPlan, scaler: Scaler, encoder: VideoEncoder, output: Output) {
            self.plan = plan
            self.scaler = scaler
            self.encoder = encoder
            self.output = output
        }

        /// Scales and encodes one picture and publishes what comes out into the rung's hub.
        func encode(_ picture: VideoFrame, source: StreamPath, logger: Logger) {
            guard encoder.admit(presentationTime: picture.presentationTime, isSourceKeyframe: picture.isSourceKeyframe) else {
                return
            }
            do {
                let coded = try encoder.encode(try scaler.scale(picture))
                for frame in coded {
                    output.publish(output.interleaver.video(frame))
                }
            } catch {
                errors += 1
                if errors == 1 || errors % 100 == 0 {
                    logger.error("encoding failed", metadata: [
                        "stream": "\(source)", "rung": "\(plan.rung.name)", "error": "\(error)", "errors": "\(errors)",
                    ])
                }
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

    private var decoder: VideoDecoder?
    private var videoSequenceHeader: ByteBuffer?
    private var audioSequenceHeader: MediaFrame?
    private var rungs: [Rung] = []
    private let audio: AudioTranscoder
    /// Audio tags whose header does not parse.
    private var unsupportedAudioTags = 0
    private var outputs: [String: Output] = [:]
    /// The rungs' helper threads, and which rungs (indices into `rungs`) each thread
    /// encodes: entry 0 is the job thread's own share.
    private let threads: ForkJoinThreads
    private var shares: [[Int]] = []
    /// The latest picture size of each rung, for the statistics.
    private var rungSizes: [String: (width: Int, height: Int)] = [:]
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
        onRendition: @escaping @Sendable (TranscodePipeline.Rendition) -> Void
    ) {
        self.source = source
        self.configuration = configuration
        self.serializers = serializers
        self.logger = logger
        self.onRendition = onRendition
        self.audio = AudioTranscoder(bitRatePerChannel: configuration.audioBitRatePerChannel, logger: logger)
        let helpers = max(0, min(configuration.rungThreads, configuration.ladder.rungs.count) - 1)
        do {
            self.threads = try ForkJoinThreads(helperCount: helpers)
        } catch {
            // Without helper threads every rung is encoded on the job thread: slower, not broken.
            logger.warning("cannot start rung threads; encoding rungs one after another", metadata: ["error": "\(error)"])
            self.threads = (try? ForkJoinThreads(helperCount: 0)) ?? ForkJoinThreads.serial
        }
    }

    // MARK: - Input

    /// Processes a batch of source frames, then wakes the renditions' subscribers once.
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
        flushHubs()
        refreshStatistics()
    }

    /// End of input: drains the decoder, encoders and interleavers, then ends the hubs.
    func finish() {
        drainPipeline()
        publishAudio(audio.flush())
        for output in outputs.values {
            publish(output.interleaver.drain(), to: output)
        }
        flushHubs()
        refreshStatistics()
        for output in outputs.values {
            output.hub.end()
        }
        threads.stop()
    }

    private func handleAudio(_ frame: MediaFrame) {
        guard let header = try? AudioTagHeader(from: frame.payload) else {
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
                publish(output.interleaver.audio(frame), to: output)
            }
        }
    }

    private func handleVideo(_ frame: MediaFrame) {
        guard let decoder else {
            statistics.framesBeforeConfiguration += 1
            return
        }
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

    // MARK: - Configuration

    /// A video sequence header: (re)opens the decoder and the rungs for its picture size.
    /// An identical header (a reconnecting encoder) changes nothing.
    private func configure(_ header: MediaFrame) {
        if let videoSequenceHeader, videoSequenceHeader == header.payload {
            return
        }
        if decoder != nil {
            statistics.reconfigurations += 1
            drainPipeline()
        }
        videoSequenceHeader = header.payload
        rungs = []
        shares = []
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
                    publish([RenditionMetadata.frame(
                        width: plan.width,
                        height: plan.height,
                        frameRate: min(frameRate, plan.rung.maximumFrameRate ?? .infinity),
                        videoBitRate: plan.rung.videoBitRate,
                        audio: RenditionMetadata.audioConfiguration(of: audioSequenceHeader),
                        audioBitRate: audio.encoder?.settings.bitRate,
                        timestamp: header.timestamp
                    )], to: output)
                    publish(output.interleaver.video(encoder.sequenceHeader(timestamp: header.timestamp)), to: output)
                }
                rungs.append(Rung(plan: plan, scaler: scaler, encoder: encoder, output: output))
                rungSizes[plan.rung.name] = (plan.width, plan.height)
            } catch {
                logger.error("cannot open rung", metadata: ["stream": "\(source)", "rung": "\(plan.rung.name)", "error": "\(error)"])
            }
        }
        shares = Self.shares(for: rungs, sourceArea: track.width * track.height, width: threads.width)
        // Rungs the new source size no longer has (it became smaller): their streams end.
        for (name, output) in outputs where !names.contains(name) {
            publish(output.interleaver.drain(), to: output)
            output.hub.flush()
            output.hub.end()
            outputs[name] = nil
        }
    }

    /// The rendition's output, created (hub, publisher, callback, audio header) on first use.
    private func output(for plan: RungPlan) -> Output? {
        if let existing = outputs[plan.rung.name] {
            return existing
        }
        let path: StreamPath
        do {
            path = try StreamPath(app: source.app, name: "\(source.name)_\(plan.rung.name)")
        } catch {
            logger.error("invalid rendition name", metadata: ["stream": "\(source)", "rung": "\(plan.rung.name)"])
            return nil
        }
        // A rendition keeps the source's timeline exactly: its input is already normalised,
        // and a gap where frames were dropped for lag must not shift it against the others.
        var hubConfiguration = configuration.hubConfiguration
        hubConfiguration.timestampJumpThreshold = nil
        let hub = StreamHub(path: path, serializers: serializers, configuration: hubConfiguration)
        guard case .attached = hub.attachPublisher(id: Self.publisherID, evict: {}) else {
            return nil
        }
        let output = Output(name: plan.rung.name, hub: hub, interleaver: Interleaver(maximumAudioLead: configuration.maximumAudioLead))
        outputs[plan.rung.name] = output
        onRendition(TranscodePipeline.Rendition(plan: plan, hub: hub))
        if let audioSequenceHeader {
            publish(output.interleaver.audio(audioSequenceHeader), to: output)
        }
        return output
    }

    // MARK: - Encoding

    /// Encodes each picture into every rung. Rungs are spread over the job thread and
    /// `threads`' helpers (see `shares`); each rung is touched by one thread per picture,
    /// and all rungs finish a picture before the next starts, so a rung's frames stay in
    /// order and every rung sees the same pictures.
    private func encode(_ pictures: [VideoFrame]) {
        let source = source
        let logger = logger
        for picture in pictures {
            let work = shares.map { indices in
                let rungs = indices.map { self.rungs[$0] }
                return { for rung in rungs { rung.encode(picture, source: source, logger: logger) } }
            }
            threads.perform(work)
        }
    }

    /// Splits the rungs into at most `threads.width` groups of about equal cost: the picture
    /// area each encodes, with the job thread's group starting with the decode, which it
    /// does alone (weighted as half an encode of the source size).
    private static func shares(for rungs: [Rung], sourceArea: Int, width: Int) -> [[Int]] {
        guard width > 1, rungs.count > 1 else { return [Array(rungs.indices)] }
        var groups = [[Int]](repeating: [], count: min(width, rungs.count + 1))
        var costs = [Int](repeating: 0, count: groups.count)
        costs[0] = sourceArea / 2
        let order = rungs.indices.sorted { rungs[$0].plan.width * rungs[$0].plan.height > rungs[$1].plan.width * rungs[$1].plan.height }
        for index in order {
            let lightest = costs.indices.min { costs[$0] < costs[$1] } ?? 0
            groups[lightest].append(index)
            costs[lightest] += rungs[index].plan.width * rungs[index].plan.height
        }
        return groups.filter { !$0.isEmpty }
    }

    /// Pictures still in the decoder, then frames still in the encoders, go out; the
    /// encoders are done afterwards (their statistics are kept).
    private func drainPipeline() {
        if let decoder {
            encode(decoder.flush())
        }
        for rung in rungs {
            do {
                for frame in try rung.encoder.flush() {
                    publish(rung.output.interleaver.video(frame), to: rung.output)
                }
            } catch {
                logger.error("flushing the encoder failed", metadata: ["stream": "\(source)", "rung": "\(rung.plan.rung.name)", "error": "\(error)"])
            }
            var total = previousEncoders[rung.plan.rung.name] ?? .init()
            add(rung.encoder.statistics, to: &total)
            previousEncoders[rung.plan.rung.name] = total
        }
        rungs = []
        shares = []
    }

    // MARK: - Output

    private func publish(_ frames: [MediaFrame], to output: Output) {
        output.publish(frames)
    }

    private func flushHubs() {
        for output in outputs.values where output.dirty {
            output.dirty = false
            output.hub.flush()
        }
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
            var total = previousEncoders[rung.plan.rung.name] ?? .init()
            add(rung.encoder.statistics, to: &total)
            var rendition = RenditionStatistics(encoder: total)
            rendition.width = rung.plan.width
            rendition.height = rung.plan.height
            rendition.encodeErrors = rung.errors
            renditions[rung.plan.rung.name] = rendition
        }
        statistics.renditions = renditions
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
