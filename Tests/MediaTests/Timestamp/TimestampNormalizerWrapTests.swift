import Testing

@testable import Media

/// Timestamp arithmetic never traps: 32-bit publisher clocks wrap, and the normaliser's
/// 64-bit timeline goes on, whatever the publisher sends.
struct TimestampNormalizerWrapTests {
    @Test func wrapsAtTwoToTheThirtyTwoMinusOne() {
        var normalizer = TimestampNormalizer()
        let start = normalizer.normalize(UInt32.max - 66, kind: .video)
        let beforeWrap = normalizer.normalize(UInt32.max - 33, kind: .video)
        let atMax = normalizer.normalize(UInt32.max, kind: .video)
        let afterWrap = normalizer.normalize(32, kind: .video)
        #expect(beforeWrap - start == 33)
        #expect(atMax - beforeWrap == 33)
        #expect(afterWrap - atMax == 33)
    }

    @Test func extremeJumpsNeverTrapAndNeverGoBackwards() {
        var normalizer = TimestampNormalizer()
        var previous = Int64.min
        for input: UInt32 in [0, UInt32.max, 0, UInt32.max / 2, UInt32.max / 2 + 1, 1 << 31, UInt32.max, 7, UInt32.max - 1] {
            for kind in [MediaKind.video, .audio] {
                let output = normalizer.normalize(input, kind: kind)
                if kind == .video {
                    #expect(output >= previous)
                    previous = output
                }
            }
        }
        normalizer.beginNewEpoch()
        #expect(normalizer.normalize(UInt32.max, kind: .video) > previous)
    }
}
