import Foundation
import Logging
import Media
import NIOCore
import Synchronization
import Transcode

/// The Estuary side of the comparison, run in its own process: the source FLV is read in
/// chunks (as a socket would deliver it) into one `TranscodePipeline` with the default
/// ladder. Every rendition hub has one FLV viewer that drains and discards, so each rung's
/// frames are serialised as they would be for real viewers (ffmpeg writes FLV to
/// /dev/null on its side). Input is paced by the pipeline's progress instead of the clock,
/// so the pipeline runs flat out and never drops a frame for lag.
enum EstuaryRun {
    static func run(input: String, configuration: TranscodePipeline.Configuration) async throws -> TranscodeStatistics {
        var logger = Logger(label: "transcode-bench")
        logger.logLevel = .warning
        var configuration = configuration
        configuration.queueCapacity = 1_000
        let viewers = Mutex<[HubSubscriber]>([])
        let pipeline = try TranscodePipeline(
            source: try StreamPath(app: "bench", name: "source"),
            configuration: configuration,
            serializers: [FLVTagSerializer()],
            logger: logger
        ) { rendition in
            let viewer = HubSubscriber(format: .flvTag, maxQueueBytes: 64 << 20, coalescesWakeUps: false) { subscriber in
                _ = subscriber.drain()
            }
            rendition.hub.subscribe(viewer)
            viewers.withLock { $0.append(viewer) }
        }

        guard let file = FileHandle(forReadingAtPath: input) else {
            throw BenchFailure("cannot open \(input)")
        }
        var reader = FLVTagReader()
        var buffer = ByteBuffer()
        var submitted = 0
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(3600)
        while let chunk = try file.read(upToCount: 1 << 20), !chunk.isEmpty {
            buffer.writeBytes(chunk)
            while let tag = try reader.nextTag(from: &buffer) {
                let frame = try tag.mediaFrame()
                submitted += 1
                // Keep at most about 2 s of input (60 pictures and 94 AAC frames) queued
                // ahead of the worker. Frames of every kind on both sides: `framesIn` counts
                // audio too, and against video frames alone the lead grew with the run (to
                // 15 s of input taken as one batch, its output held until the batch ended).
                while pipeline.statistics.framesIn + 150 < submitted, clock.now < deadline {
                    try await Task.sleep(for: .milliseconds(2))
                }
                pipeline.submit(frame)
            }
            buffer.discardReadBytes()
        }
        let statistics = await pipeline.finish()
        _ = viewers.withLock { $0.count }
        return statistics
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
