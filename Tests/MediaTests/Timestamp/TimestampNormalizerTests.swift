import Media
import Testing

struct TimestampNormalizerTests {
    struct Output: Equatable {
        var kind: MediaKind
        var input: Int64
        var output: Int64
    }

    /// A publisher's interleaved audio/video timeline: 30 fps video, 1024-sample AAC at
    /// 44.1 kHz (~43 frames/s), each timestamp moved by a deterministic jitter of up to
    /// ±`jitter` ms, sorted by timestamp as encoders send them.
    static func interleaved(from start: Int64, duration: Int64, jitter: Int64 = 0, audio: Bool = true, video: Bool = true) -> [(MediaKind, Int64)] {
        var frames: [(MediaKind, Int64)] = []
        var state: UInt64 = 7
        func nextJitter() -> Int64 {
            guard jitter > 0 else { return 0 }
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int64(state >> 33) % (2 * jitter + 1) - jitter
        }
        if video {
            var index: Int64 = 0
            while index * 1000 / 30 < duration {
                frames.append((.video, start + index * 1000 / 30 + nextJitter()))
                index += 1
            }
        }
        if audio {
            var index: Int64 = 0
            while index * 1024 * 1000 / 44100 < duration {
                frames.append((.audio, start + index * 1024 * 1000 / 44100 + nextJitter()))
                index += 1
            }
        }
        return frames.sorted { $0.1 < $1.1 }
    }

    static func run(_ normalizer: inout TimestampNormalizer, _ frames: [(MediaKind, Int64)]) -> [Output] {
        frames.map { kind, input in
            Output(kind: kind, input: input, output: normalizer.normalize(UInt32(truncatingIfNeeded: input), kind: kind))
        }
    }

    /// Checks per-track monotonicity and returns the largest step between consecutive outputs of a track.
    static func expectMonotonicPerTrack(_ outputs: [Output], sourceLocation: SourceLocation = #_sourceLocation) -> Int64 {
        var last: [MediaKind: Int64] = [:]
        var largestStep: Int64 = 0
        for item in outputs where item.kind != .script {
            if let previous = last[item.kind] {
                #expect(item.output >= previous, "\(item.kind) went backwards at input \(item.input)", sourceLocation: sourceLocation)
                largestStep = max(largestStep, item.output - previous)
            }
            last[item.kind] = item.output
        }
        return largestStep
    }

    @Test func cleanInputPassesThroughUnchanged() {
        var normalizer = TimestampNormalizer()
        let outputs = Self.run(&normalizer, Self.interleaved(from: 0, duration: 5000))
        #expect(outputs.allSatisfy { $0.output == $0.input })
        #expect(normalizer.rebaseCount == 0)
    }

    @Test func startsOnThePublishersTimeline() {
        var normalizer = TimestampNormalizer()
        #expect(normalizer.normalize(3_000_000, kind: .video) == 3_000_000)
        #expect(normalizer.normalize(3_000_010, kind: .audio) == 3_000_010)
    }

    @Test func jitteredInterleavedTracksStayMonotonicWithoutRebasing() {
        var normalizer = TimestampNormalizer()
        let outputs = Self.run(&normalizer, Self.interleaved(from: 0, duration: 20_000, jitter: 8))
        let largestStep = Self.expectMonotonicPerTrack(outputs)
        #expect(largestStep <= 34 + 16)
        #expect(normalizer.rebaseCount == 0)
        // Clamping only ever holds a frame at its track's previous output: never more than
        // two jitter amplitudes late, never early.
        #expect(outputs.allSatisfy { $0.output >= $0.input && $0.output - $0.input <= 16 })
    }

    @Test func smallBackwardStepIsClampedToTheTracksPreviousOutput() {
        var normalizer = TimestampNormalizer()
        #expect(normalizer.normalize(100, kind: .video) == 100)
        #expect(normalizer.normalize(90, kind: .audio) == 90)  // other track: unaffected
        #expect(normalizer.normalize(95, kind: .video) == 100)
        #expect(normalizer.normalize(133, kind: .video) == 133)
        #expect(normalizer.rebaseCount == 0)
    }

    @Test func unwrapsThe32BitWrapAround() {
        var normalizer = TimestampNormalizer()
        let start = Int64(UInt32.max) - 2000
        let frames = Self.interleaved(from: start, duration: 5000, jitter: 3)
        let outputs = Self.run(&normalizer, frames)
        #expect(outputs.last.map { $0.output > Int64(UInt32.max) } == true)
        #expect(Self.expectMonotonicPerTrack(outputs) <= 34 + 6)
        #expect(normalizer.rebaseCount == 0)
        // The raw input wrapped to small numbers; the output kept going.
        #expect(frames.contains { UInt32(truncatingIfNeeded: $0.1) < 3000 })
    }

    @Test func tenSecondForwardJumpIsRebasedAndKeepsAudioAndVideoAligned() {
        var normalizer = TimestampNormalizer()
        let before = Self.run(&normalizer, Self.interleaved(from: 0, duration: 2000))
        let after = Self.run(&normalizer, Self.interleaved(from: 12_000, duration: 2000))
        let lastVideoBefore = before.last { $0.kind == .video }?.output ?? 0
        let lastAudioBefore = before.last { $0.kind == .audio }?.output ?? 0
        let firstAfter = after[0]
        #expect(normalizer.rebaseCount == 1)
        // The first frame after the jump lands one frame duration after its track's last output.
        let lastOfItsTrack = firstAfter.kind == .video ? lastVideoBefore : lastAudioBefore
        let frameDuration: Int64 = firstAfter.kind == .video ? 33 : 23
        #expect(abs(firstAfter.output - (lastOfItsTrack + frameDuration)) <= 1)
        // One stream offset: both tracks moved by the same amount, so sync is unchanged.
        #expect(Set(after.map { $0.output - $0.input }).count == 1)
        _ = Self.expectMonotonicPerTrack(before + after)
    }

    @Test func encoderRestartToZeroIsRebasedForward() {
        var normalizer = TimestampNormalizer()
        let before = Self.run(&normalizer, Self.interleaved(from: 0, duration: 60_000, jitter: 2))
        let after = Self.run(&normalizer, Self.interleaved(from: 0, duration: 3000, jitter: 2))
        #expect(normalizer.rebaseCount == 1)
        let highestBefore = before.map(\.output).max() ?? 0
        #expect(after[0].output > highestBefore - 34)
        #expect(after[0].output < highestBefore + 60)
        // Across the rebase a track may step by one frame of the other track more than
        // usual: the first frame after it lands after the other track's last output.
        #expect(Self.expectMonotonicPerTrack(before + after) <= 34 + 23 + 4)
    }

    @Test func backwardJumpSmallerThanTheThresholdIsClampedNotRebased() {
        var normalizer = TimestampNormalizer()
        _ = Self.run(&normalizer, Self.interleaved(from: 0, duration: 3000))
        let after = Self.run(&normalizer, Self.interleaved(from: 2500, duration: 1000))
        #expect(normalizer.rebaseCount == 0)
        #expect(after.first.map { $0.output >= 2966 } == true)
    }

    @Test func reconnectEpochContinuesAfterTheHighestOutput() {
        var normalizer = TimestampNormalizer()
        let first = Self.run(&normalizer, Self.interleaved(from: 0, duration: 5000))
        let highest = first.map(\.output).max() ?? 0

        normalizer.beginNewEpoch()
        // The new publisher sends onMetaData first, then restarts its clocks at 0.
        let metadata = normalizer.normalize(0, kind: .script)
        let second = Self.run(&normalizer, Self.interleaved(from: 0, duration: 5000))

        #expect(metadata <= highest)
        #expect(metadata >= first.last { $0.kind == .video }?.output ?? 0)
        #expect(second[0].output > highest)
        #expect(second[0].output <= highest + 34)
        #expect(normalizer.rebaseCount == 1)
        #expect(Set(second.map { $0.output - $0.input }).count == 1)
        _ = Self.expectMonotonicPerTrack(first + second)
    }

    @Test func reconnectWithTimestampsFarAheadStillContinues() {
        var normalizer = TimestampNormalizer()
        let first = Self.run(&normalizer, Self.interleaved(from: 0, duration: 2000))
        normalizer.beginNewEpoch()
        let second = Self.run(&normalizer, Self.interleaved(from: 4_000_000_000, duration: 2000))
        #expect(second[0].output > (first.map(\.output).max() ?? 0))
        #expect(second[0].output < 2100)
        #expect(normalizer.rebaseCount == 1)
    }

    @Test func repeatedReconnectsNeverGoBackwards() {
        var normalizer = TimestampNormalizer()
        var all: [Output] = []
        for epoch in 0..<5 {
            if epoch > 0 { normalizer.beginNewEpoch() }
            all += Self.run(&normalizer, Self.interleaved(from: Int64(epoch) * 17, duration: 1500, jitter: 3))
        }
        _ = Self.expectMonotonicPerTrack(all)
        #expect(normalizer.rebaseCount == 4)
        #expect((all.last?.output ?? 0) > 7000)
    }

    @Test func epochBeforeAnyFrameChangesNothing() {
        var normalizer = TimestampNormalizer()
        normalizer.beginNewEpoch()
        #expect(normalizer.normalize(500, kind: .video) == 500)
        #expect(normalizer.rebaseCount == 0)
    }

    @Test func audioOnlyStream() {
        var normalizer = TimestampNormalizer()
        let before = Self.run(&normalizer, Self.interleaved(from: 0, duration: 3000, jitter: 2, video: false))
        let after = Self.run(&normalizer, Self.interleaved(from: 50_000, duration: 3000, jitter: 2, video: false))
        #expect(normalizer.rebaseCount == 1)
        let step = after[0].output - (before.last?.output ?? 0)
        #expect(step >= 20 && step <= 26)
        #expect(Self.expectMonotonicPerTrack(before + after) <= 28)
    }

    @Test func videoOnlyStream() {
        var normalizer = TimestampNormalizer()
        let before = Self.run(&normalizer, Self.interleaved(from: 0, duration: 3000, audio: false))
        let after = Self.run(&normalizer, Self.interleaved(from: 0, duration: 3000, audio: false))
        #expect(normalizer.rebaseCount == 1)
        let step = after[0].output - (before.last?.output ?? 0)
        #expect(step >= 32 && step <= 35)
    }

    @Test func videoResumingAfterAPauseIsNotAJump() {
        // A phone app in the background stops sending video for 5 s; audio keeps flowing.
        var normalizer = TimestampNormalizer()
        let audio = Self.interleaved(from: 0, duration: 10_000, video: false)
        let video = Self.interleaved(from: 0, duration: 10_000, audio: false).filter { $0.1 < 2000 || $0.1 >= 7000 }
        let outputs = Self.run(&normalizer, (audio + video).sorted { $0.1 < $1.1 })
        #expect(normalizer.rebaseCount == 0)
        #expect(outputs.allSatisfy { $0.output == $0.input })
    }

    @Test func constantSkewBetweenTracksLargerThanTheThresholdIsKept() {
        // Some hardware encoders stamp audio 2 s ahead of video. One offset cannot fix
        // that; it must at least not make the tracks fight.
        var normalizer = TimestampNormalizer()
        let audio = Self.interleaved(from: 2000, duration: 5000, video: false)
        let video = Self.interleaved(from: 0, duration: 5000, audio: false)
        let outputs = Self.run(&normalizer, (audio + video).sorted { $0.1 < $1.1 })
        #expect(normalizer.rebaseCount == 0)
        #expect(outputs.allSatisfy { $0.output == $0.input })
    }

    @Test func scriptDataFollowsVideoAndNeverMovesTheTimeline() {
        var normalizer = TimestampNormalizer()
        #expect(normalizer.normalize(0, kind: .script) == 0)
        _ = Self.run(&normalizer, Self.interleaved(from: 0, duration: 3000))
        let lastVideo = normalizer.normalize(3000, kind: .video)
        // A mid-stream onMetaData stamped 0 (or anything) takes the latest video time.
        #expect(normalizer.normalize(0, kind: .script) == lastVideo)
        #expect(normalizer.normalize(4_000_000_000, kind: .script) == lastVideo)
        #expect(normalizer.normalize(3033, kind: .video) == 3033)
        #expect(normalizer.rebaseCount == 0)
    }

    @Test func scriptFollowsAudioWhenThereIsNoVideo() {
        var normalizer = TimestampNormalizer()
        #expect(normalizer.normalize(1000, kind: .audio) == 1000)
        #expect(normalizer.normalize(5, kind: .script) == 1000)
    }

    @Test func thresholdIsConfigurable() {
        var strict = TimestampNormalizer(jumpThreshold: 100)
        _ = strict.normalize(0, kind: .video)
        _ = strict.normalize(33, kind: .video)
        #expect(strict.normalize(300, kind: .video) == 66)
        #expect(strict.rebaseCount == 1)

        var lenient = TimestampNormalizer()
        _ = lenient.normalize(0, kind: .video)
        _ = lenient.normalize(33, kind: .video)
        #expect(lenient.normalize(300, kind: .video) == 300)
        #expect(lenient.rebaseCount == 0)
    }

    @Test func learnsTheFrameDurationUsedForRebasing() {
        var normalizer = TimestampNormalizer()
        var last: Int64 = 0
        for index in 0..<50 {
            last = normalizer.normalize(UInt32(index * 40), kind: .video)  // 25 fps
        }
        #expect(normalizer.normalize(900_000, kind: .video) == last + 40)
    }
}
