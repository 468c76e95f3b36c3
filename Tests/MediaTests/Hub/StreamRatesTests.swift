import NIOCore
import Testing

@testable import Media

/// The hub's per-track counters and the rates an ingest reports from them.
@Suite struct StreamRatesTests {
    typealias Hub = StreamHubTests

    @Test func hubCountsCodedFramesAndBytesPerTrackWithoutHeadersOrMetadata() throws {
        let hub = StreamHubTests().makeHub()
        try StreamHubTests().attach(hub)
        let frames = [
            Hub.metadata(), Hub.audioSequenceHeader(), Hub.videoSequenceHeader(),
            Hub.video(0, keyframe: true, size: 1000), Hub.audio(10), Hub.video(40, keyframe: false, size: 200),
            Hub.audio(33), Hub.video(80, keyframe: false, size: 300),
            // A reconnecting encoder's identical header is not media either.
            Hub.videoSequenceHeader(timestamp: 100),
        ]
        for frame in frames { hub.publish(frame, publisher: 1) }
        // Frames from a publisher that is not attached are refused, and not counted.
        hub.publish(Hub.video(120, keyframe: true, size: 5000), publisher: 2)
        hub.publish(Hub.audio(120), publisher: 2)

        let statistics = hub.statistics
        // Video tag bodies are a 5-byte header plus `size` bytes; audio bodies are 6 bytes.
        #expect(statistics.videoFramesIn == 3)
        #expect(statistics.videoBytesIn == 1005 + 205 + 305)
        #expect(statistics.audioFramesIn == 2)
        #expect(statistics.audioBytesIn == 12)
        // The totals still count everything the publisher sent.
        #expect(statistics.framesIn == frames.count)
        #expect(statistics.bytesIn == frames.reduce(0) { $0 + $1.payload.readableBytes })
    }

    // MARK: IngestRateMeter

    /// A publisher at a constant rate: `seconds` after the start, its hub's counters.
    static func counters(at seconds: Double, fps: Double = 25, videoBitRate: Double = 500_000, audioBitRate: Double = 64_000, audioFramesPerSecond: Double = 44_100 / 1024) -> StreamHub.Statistics {
        var statistics = StreamHub.Statistics()
        statistics.videoFramesIn = Int((seconds * fps).rounded(.down))
        statistics.videoBytesIn = Int(seconds * videoBitRate / 8)
        statistics.audioFramesIn = Int((seconds * audioFramesPerSecond).rounded(.down))
        statistics.audioBytesIn = Int(seconds * audioBitRate / 8)
        return statistics
    }

    static let origin = ContinuousClock.now

    static func at(_ seconds: Double) -> ContinuousClock.Instant {
        origin.advanced(by: .milliseconds(Int((seconds * 1000).rounded())))
    }

    @Test func ratesAreNilUntilTheSamplesSpanTheMinimum() {
        var meter = IngestRateMeter(window: .seconds(5), minimumSpan: .milliseconds(1500))
        #expect(meter.record(Self.counters(at: 0.3), at: Self.at(0.3)) == .init())
        #expect(meter.record(Self.counters(at: 1.3), at: Self.at(1.3)) == .init())
        let rates = meter.record(Self.counters(at: 2.3), at: Self.at(2.3))
        #expect(rates.frameRate == 25)
        #expect(rates.videoBitRate == 500_000)
        #expect(rates.audioBitRate == 64_000)
    }

    @Test func aSteadyPublisherIsMeasuredExactlyDespiteHeartbeatJitter() throws {
        var meter = IngestRateMeter()
        var time = 0.0
        var last = IngestRateMeter.Rates()
        for step in [1.0, 0.9, 1.2, 1.0, 0.8, 1.1, 1.0, 1.0, 0.95, 1.05, 1.0, 1.0] {
            time += step
            last = meter.record(Self.counters(at: time), at: Self.at(time))
        }
        // Whole frames are counted: over a 5 s window that is within 1 frame of 25 × 5.
        #expect(abs(try #require(last.frameRate) - 25) <= 0.2)
        #expect(abs(try #require(last.videoBitRate) - 500_000) <= 10)
        #expect(abs(try #require(last.audioBitRate) - 64_000) <= 10)
    }

    @Test func theWindowForgetsSamplesOlderThanItsLength() {
        var meter = IngestRateMeter(window: .seconds(5), minimumSpan: .seconds(1))
        var frames = 0
        var rates: [Double] = []
        // 10 s at 25 fps, then 10 s at 30 fps, sampled every second.
        for second in 0...20 {
            var statistics = StreamHub.Statistics()
            statistics.videoFramesIn = frames
            statistics.videoBytesIn = frames * 2_000
            rates.append(meter.record(statistics, at: Self.at(Double(second))).frameRate ?? -1)
            frames += second < 10 ? 25 : 30
        }
        #expect(rates[0] == -1)
        #expect(rates[1] == 25 && rates[10] == 25)
        // Two seconds into the change the 5 s window holds 2 s at 30 and 3 s at 25.
        #expect(rates[12] == 27)
        #expect(rates[15] == 30 && rates[20] == 30)
    }

    @Test func frameRatesAreRoundedToTwoDecimals() {
        var meter = IngestRateMeter(window: .seconds(5), minimumSpan: .seconds(1))
        var statistics = StreamHub.Statistics()
        _ = meter.record(statistics, at: Self.at(0))
        statistics.videoFramesIn = 100
        #expect(meter.record(statistics, at: Self.at(3)).frameRate == 33.33)
        // NTSC's 30000/1001 over a window long enough to hold 2997 frames.
        var ntsc = IngestRateMeter(window: .seconds(100), minimumSpan: .seconds(1))
        _ = ntsc.record(StreamHub.Statistics(), at: Self.at(0))
        statistics.videoFramesIn = 2997
        #expect(ntsc.record(statistics, at: Self.at(100)).frameRate == 29.97)
    }

    @Test func aTrackWithoutFramesHasNoRates() {
        var audioOnly = IngestRateMeter(minimumSpan: .seconds(1))
        _ = audioOnly.record(Self.counters(at: 0, fps: 0, videoBitRate: 0), at: Self.at(0))
        let audio = audioOnly.record(Self.counters(at: 2, fps: 0, videoBitRate: 0), at: Self.at(2))
        #expect(audio.frameRate == nil && audio.videoBitRate == nil)
        #expect(audio.audioBitRate == 64_000)

        var videoOnly = IngestRateMeter(minimumSpan: .seconds(1))
        _ = videoOnly.record(Self.counters(at: 0, audioBitRate: 0, audioFramesPerSecond: 0), at: Self.at(0))
        let video = videoOnly.record(Self.counters(at: 2, audioBitRate: 0, audioFramesPerSecond: 0), at: Self.at(2))
        #expect(video.frameRate == 25 && video.videoBitRate == 500_000)
        #expect(video.audioBitRate == nil)
    }

    @Test func aStalledPublisherMeasuresZeroAndCountersGoingBackStartAnew() {
        var meter = IngestRateMeter(window: .seconds(5), minimumSpan: .seconds(1))
        _ = meter.record(Self.counters(at: 10), at: Self.at(0))
        // Nothing arrives for 2 s: the stream is live but sends no frames.
        let stalled = meter.record(Self.counters(at: 10), at: Self.at(2))
        #expect(stalled.frameRate == 0 && stalled.videoBitRate == 0 && stalled.audioBitRate == 0)
        // A new hub under the same path: its counters restart from zero.
        #expect(meter.record(Self.counters(at: 1), at: Self.at(3)) == .init())
        let fresh = meter.record(Self.counters(at: 3), at: Self.at(5))
        #expect(fresh.frameRate == 25 && fresh.videoBitRate == 500_000 && fresh.audioBitRate == 64_000)
    }
}
