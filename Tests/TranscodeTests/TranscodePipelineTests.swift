import Foundation
import LibAV
import Logging
import Media
import NIOCore
import Synchronization
import TestSupport
import Testing

@testable import Transcode

/// Subscribes to every rendition hub as the pipeline creates it (on the worker thread,
/// before the hub's first frame), and hands the frames back afterwards.
final class RenditionCollector: Sendable {
    private let renditions = Mutex<[String: (plan: RungPlan, hub: StreamHub, subscriber: HubSubscriber)]>([:])

    func attach(_ rendition: TranscodePipeline.Rendition) {
        let subscriber = HubSubscriber(format: nil, maxQueueBytes: 1 << 30, wake: { _ in })
        rendition.hub.subscribe(subscriber)
        renditions.withLock { $0[rendition.plan.rung.name] = (rendition.plan, rendition.hub, subscriber) }
    }

    var names: [String] { renditions.withLock { $0.keys.sorted() } }

    func plan(_ name: String) -> RungPlan? { renditions.withLock { $0[name]?.plan } }

    func hub(_ name: String) -> StreamHub? { renditions.withLock { $0[name]?.hub } }

    func frames(_ name: String) -> [MediaFrame] {
        let subscriber = renditions.withLock { $0[name]?.subscriber }
        return subscriber?.drain().packets.map(\.frame) ?? []
    }
}

@Suite(.serialized) struct TranscodePipelineTests {
    static let logger = Logger(label: "transcode-tests")

    static func run(
        _ frames: [MediaFrame],
        ladder: Ladder,
        queueCapacity: Int = 10_000,
        collector: RenditionCollector,
        configure: (inout TranscodePipeline.Configuration) -> Void = { _ in }
    ) async throws -> TranscodeStatistics {
        var configuration = TranscodePipeline.Configuration(ladder: ladder)
        configuration.queueCapacity = queueCapacity
        configure(&configuration)
        let pipeline = try TranscodePipeline(
            source: try StreamPath(app: "abr", name: "demo"),
            configuration: configuration,
            serializers: [FLVTagSerializer()],
            logger: logger,
            onRendition: collector.attach
        )
        for frame in frames {
            pipeline.submit(frame)
        }
        return await pipeline.finish()
    }

    /// The slice's main check: a 4 s 720p30 source (GOP 30, B-frames) into three rungs.
    @Test(.timeLimit(.minutes(5)))
    func threeRungsFrom720pHaveTheirSizesBitRatesAndTheSourceKeyframes() async throws {
        let directory = try TemporaryDirectory()
        let seconds = 4
        let source = try await SourceClip.make(seconds: seconds, in: directory)
        let sourceProbe = try await ProbedVideo.probe(source.url, in: directory)
        #expect(sourceProbe.keyframePresentationTimes.count == 4)
        #expect(try sourceProbe.keyframePresentationTimes == source.keyframePresentationTimes)

        let ladder = Ladder(rungs: [
            LadderRung(name: "720p", height: 720, videoBitRate: 2_800_000),
            LadderRung(name: "480p", height: 480, videoBitRate: 1_400_000),
            LadderRung(name: "360p", height: 360, videoBitRate: 800_000),
            LadderRung(name: "1080p", height: 1080, videoBitRate: 5_000_000),  // above the source: skipped
        ])
        let collector = RenditionCollector()
        let statistics = try await Self.run(source.frames, ladder: ladder, collector: collector)
        let sourcePictures = source.frames.filter { $0.kind == .video && !$0.isSequenceHeader && (try? VideoTagHeader(from: $0.payload).packetType) == .codedFrames }.count
        let sourceAudio = source.frames.filter { $0.kind == .audio && !$0.isSequenceHeader }

        #expect(collector.names == ["360p", "480p", "720p"])
        #expect(statistics.decodedPictures == sourcePictures)
        #expect(statistics.corruptFrames == 0 && statistics.lagDroppedFrames == 0)
        let fps = Double(statistics.decodedPictures) / statistics.busySeconds
        print("3-rung 720p30 transcode: \(statistics.decodedPictures) pictures in \(statistics.busySeconds) s busy = \(fps) fps (\(fps / 30)x real time)")

        let expectedSizes = ["720p": (1280, 720), "480p": (854, 480), "360p": (640, 360)]
        for name in collector.names {
            let plan = try #require(collector.plan(name))
            let hub = try #require(collector.hub(name))
            // The rung of abr/demo, addressed as abr/demo/<rung> (not a stream named demo_<rung>).
            #expect(hub.path == (try RenditionPath(stream: StreamPath(app: "abr", name: "demo"), rendition: name)))
            #expect(hub.path.description == "abr/demo/\(name)")
            #expect(hub.isEnded)
            let frames = collector.frames(name)
            let url = directory.file("\(name).flv")
            try FLVFile.write(frames, to: url)
            let probe = try await ProbedVideo.probe(url, in: directory)
            let (width, height) = try #require(expectedSizes[name])
            #expect(probe.codecName == "h264", "\(name)")
            #expect(probe.width == width && probe.height == height, "\(name): \(probe.width)x\(probe.height)")
            #expect(probe.packets.count == sourcePictures, "\(name)")
            #expect(probe.keyframePresentationTimes == sourceProbe.keyframePresentationTimes, "\(name)")
            #expect(try await ProbedVideo.decodeProblems(of: url, in: directory) == nil, "\(name)")

            // AAC copied: the same frames, bytes unchanged, interleaved by timestamp.
            let audio = frames.filter { $0.kind == .audio && !$0.isSequenceHeader }
            #expect(audio.map(\.timestamp) == sourceAudio.map(\.timestamp), "\(name)")
            #expect(audio.map(\.payload) == sourceAudio.map(\.payload), "\(name)")
            #expect(probe.audioPackets == sourceAudio.count, "\(name)")
            let media = frames.filter { !$0.isSequenceHeader && $0.kind != .script }
            let outOfOrder = zip(media, media.dropFirst()).filter { $0.timestamp > $1.timestamp }.count
            #expect(outOfOrder == 0, "\(name)")

            let bits = Double(probe.packets.reduce(0) { $0 + $1.size }) * 8
            let bitRate = bits / Double(seconds)
            let ratio = bitRate / Double(plan.rung.videoBitRate)
            print("\(name): \(probe.width)x\(probe.height), \(Int(bitRate / 1000)) kbit/s for a \(plan.rung.videoBitRate / 1000) kbit/s target (\(Int((ratio * 100).rounded()))%)")
            #expect(ratio > 0.7 && ratio < 1.3, "\(name): \(ratio)")
        }
    }

    /// A frame with a broken NAL length and one with noise in its slice data: skipped or
    /// concealed, counted, and every rendition still decodes cleanly.
    @Test(.timeLimit(.minutes(3)))
    func corruptSourceFramesAreSkippedAndCounted() async throws {
        let directory = try TemporaryDirectory()
        let source = try await SourceClip.make(seconds: 2, size: "640x360", in: directory)
        var frames = source.frames
        let coded = frames.indices.filter { frames[$0].kind == .video && (try? VideoTagHeader(from: frames[$0].payload).packetType) == .codedFrames }
        let broken = coded[5]
        var brokenPayload = frames[broken].payload
        brokenPayload.setInteger(UInt32(0x00FF_FFFF), at: brokenPayload.readerIndex + 5)
        frames[broken] = try MediaFrame.classified(kind: .video, timestamp: frames[broken].timestamp, payload: brokenPayload)
        let noisy = coded[40]
        var noisyPayload = frames[noisy].payload
        for offset in (noisyPayload.readerIndex + 12)..<(noisyPayload.writerIndex - 1) {
            noisyPayload.setInteger(UInt8(truncatingIfNeeded: offset &* 131 &+ 7), at: offset)
        }
        frames[noisy] = try MediaFrame.classified(kind: .video, timestamp: frames[noisy].timestamp, payload: noisyPayload)
        let collector = RenditionCollector()
        let statistics = try await Self.run(frames, ladder: Ladder(rungs: [LadderRung(name: "240p", height: 240, videoBitRate: 400_000)]), collector: collector)
        #expect(statistics.corruptFrames >= 1)
        print("corrupt input: \(statistics.corruptFrames) skipped, \(statistics.concealedPictures) concealed, \(statistics.decodedPictures) decoded of \(coded.count)")
        let url = directory.file("240p.flv")
        try FLVFile.write(collector.frames("240p"), to: url)
        #expect(try await ProbedVideo.decodeProblems(of: url, in: directory) == nil)
        let probe = try await ProbedVideo.probe(url, in: directory)
        #expect(probe.keyframePresentationTimes == (try source.keyframePresentationTimes))
    }

    /// A queue of 5 frames fed 3 s of 720p at once: the worker cannot keep up, whole GOP
    /// tails are dropped and counted, and what is published still decodes, with keyframes
    /// only at source keyframes.
    @Test(.timeLimit(.minutes(3)))
    func aWorkerThatFallsBehindDropsPredictably() async throws {
        let directory = try TemporaryDirectory()
        let source = try await SourceClip.make(seconds: 3, in: directory)
        let collector = RenditionCollector()
        let statistics = try await Self.run(
            source.frames,
            ladder: Ladder(rungs: [LadderRung(name: "480p", height: 480, videoBitRate: 1_400_000)]),
            queueCapacity: 5,
            collector: collector
        )
        print("lag: \(statistics.lagDroppedFrames) frames dropped, \(statistics.decodedPictures) decoded")
        #expect(statistics.lagDroppedFrames > 0)
        #expect(statistics.corruptFrames == 0)
        let url = directory.file("480p.flv")
        try FLVFile.write(collector.frames("480p"), to: url)
        #expect(try await ProbedVideo.decodeProblems(of: url, in: directory) == nil)
        let probe = try await ProbedVideo.probe(url, in: directory)
        let sourceKeyframes = try source.keyframePresentationTimes
        #expect(Set(probe.keyframePresentationTimes).isSubset(of: Set(sourceKeyframes)), "rung keyframes \(probe.keyframePresentationTimes), source keyframes \(sourceKeyframes)")
        #expect(!probe.keyframePresentationTimes.isEmpty)
    }

    /// The publisher switches from 640x360 to 320x240 mid-stream (a new sequence header):
    /// the pipeline reopens decoder and encoders, the 240p rendition carries on in the same
    /// hub with a new sequence header, and the 360p rendition, now above the source, ends.
    @Test(.timeLimit(.minutes(3)))
    func aResolutionChangeReconfiguresWithoutDroppingTheRendition() async throws {
        let first = try TemporaryDirectory()
        let second = try TemporaryDirectory()
        let before = try await SourceClip.make(seconds: 2, size: "640x360", in: first)
        let after = try await SourceClip.make(seconds: 2, size: "320x240", in: second)
        func isEndOfSequence(_ frame: MediaFrame) -> Bool {
            frame.kind == .video && (try? VideoTagHeader(from: frame.payload).packetType) == .sequenceEnd
        }
        let shift: Int64 = 2000
        let frames = before.frames.filter { !isEndOfSequence($0) && $0.kind != .script }
            + after.frames.filter { !isEndOfSequence($0) && $0.kind != .script }.map { frame in
                var frame = frame
                frame.timestamp += shift
                return frame
            }
        let collector = RenditionCollector()
        let ladder = Ladder(rungs: [
            LadderRung(name: "360p", height: 360, videoBitRate: 800_000),
            LadderRung(name: "240p", height: 240, videoBitRate: 400_000),
        ])
        let statistics = try await Self.run(frames, ladder: ladder, collector: collector)
        #expect(statistics.reconfigurations == 1)
        #expect(statistics.decodedPictures == 120)
        #expect(statistics.renditions["240p"]?.framesEncoded == 120)
        #expect(statistics.renditions["360p"]?.framesEncoded == 60)

        let rung = collector.frames("240p")
        let headers = rung.filter { $0.kind == .video && $0.isSequenceHeader }
        let sizes = try headers.map { header -> Int in
            try VideoTrack(sequenceHeader: header).width
        }
        #expect(sizes == [426, 320])
        let expectedKeyframes = try before.keyframePresentationTimes + after.keyframePresentationTimes.map { $0 + shift }
        let directory = try TemporaryDirectory()
        let url = directory.file("240p.flv")
        try FLVFile.write(rung, to: url)
        let probe = try await ProbedVideo.probe(url, in: directory)
        #expect(probe.keyframePresentationTimes == expectedKeyframes)
        #expect(probe.packets.count == 120)
        #expect(collector.frames("360p").filter { $0.kind == .video && !$0.isSequenceHeader }.count == 60)
    }

    /// A publisher that flips its resolution over and over would have the transcoder reopen
    /// its decoder and every rung's encoder each time. After `maximumReconfigurations` in
    /// the window, new sequence headers are refused (counted), and the rungs carry on with
    /// the configuration they have.
    @Test(.timeLimit(.minutes(3)))
    func aReconfigurationStormIsRefusedAfterTheLimit() async throws {
        let first = try TemporaryDirectory()
        let second = try TemporaryDirectory()
        let large = try await SourceClip.make(seconds: 1, size: "640x360", in: first)
        let small = try await SourceClip.make(seconds: 1, size: "320x240", in: second)
        func playable(_ clip: SourceClip) -> [MediaFrame] {
            clip.frames.filter { frame in
                frame.kind == .video && (try? VideoTagHeader(from: frame.payload).packetType) != .sequenceEnd
            }
        }
        // Ten alternating one-second segments: nine changes of resolution.
        var frames: [MediaFrame] = []
        for segment in 0..<10 {
            let shift = Int64(segment) * 1000
            frames += playable(segment.isMultiple(of: 2) ? large : small).map { frame in
                var frame = frame
                frame.timestamp += shift
                return frame
            }
        }
        let collector = RenditionCollector()
        let ladder = Ladder(rungs: [LadderRung(name: "240p", height: 240, videoBitRate: 400_000)])
        let statistics = try await Self.run(frames, ladder: ladder, collector: collector) { configuration in
            configuration.maximumReconfigurations = 5
            // Wide enough that the machine's speed cannot move changes out of it.
            configuration.reconfigurationWindow = .seconds(600)
        }
        // Segment 0 configures; the changes of segments 1–5 are taken. Segment 6's (back to
        // 640x360) is refused; after it, the 320x240 segments match the configuration in
        // force (no change), and segment 8's 640x360 is refused again.
        #expect(statistics.reconfigurations == 5)
        #expect(statistics.refusedSequenceHeaders == 2)
        let sizes = try collector.frames("240p").filter { $0.kind == .video && $0.isSequenceHeader }.map { header in
            let track = try VideoTrack(sequenceHeader: header)
            return "\(track.width)x\(track.height)"
        }
        // The rung's own headers: one per accepted configuration (its size changes with the source's aspect).
        #expect(sizes == ["426x240", "320x240", "426x240", "320x240", "426x240", "320x240"])
    }

    /// A transcoder catching up takes its whole inbox as one batch. Each rung still hands
    /// every picture to its hub's subscribers as it is encoded, instead of waking them once
    /// the batch is done: a batch's output does not pile up in their queues (a 60 s
    /// benchmark run whose batches had grown to 15 s of input held that much output, +50 MiB).
    @Test(.timeLimit(.minutes(3)))
    func subscribersGetEveryPictureAsItIsEncodedWithinABatch() async throws {
        let directory = try TemporaryDirectory()
        let source = try await SourceClip.make(seconds: 2, size: "640x360", in: directory)
        // Coded pictures in each drain of the rung's subscriber, which drains when woken.
        let picturesPerDrain = Mutex<[Int]>([])
        let job = TranscodeJob(
            source: try StreamPath(app: "abr", name: "batch"),
            configuration: TranscodePipeline.Configuration(ladder: Ladder(rungs: [LadderRung(name: "240p", height: 240, videoBitRate: 400_000)])),
            serializers: [FLVTagSerializer()],
            logger: Self.logger
        ) { rendition in
            let subscriber = HubSubscriber(format: nil, maxQueueBytes: 1 << 30, coalescesWakeUps: false) { subscriber in
                let pictures = subscriber.drain().packets.filter { $0.frame.kind == .video && !$0.frame.isSequenceHeader }.count
                picturesPerDrain.withLock { $0.append(pictures) }
            }
            rendition.hub.subscribe(subscriber)
        }
        job.process(source.frames)
        job.finish()
        let drains = picturesPerDrain.withLock { $0 }
        #expect(drains.reduce(0, +) == 60)
        #expect(drains.max() == 1, "pictures per wake-up: \(drains)")
    }
}
