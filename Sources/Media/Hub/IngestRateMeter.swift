/// The measured frame rate and bit rates of one published stream, computed from its hub's
/// cumulative per-track counters (``StreamHub/Statistics``) sampled at intervals (an
/// ingest samples them with each heartbeat, about once a second).
///
/// The rates cover the last `window` of samples (the span from the newest sample back to
/// the newest one at least `window` old), so a keyframe or a publisher's burst moves them
/// little. They are nil until the samples span `minimumSpan`, and a track that has not
/// carried a single coded frame has none. A counter that goes backwards (a new hub under
/// the same path) starts the measurement anew.
///
/// A value type with the clock passed in, so the arithmetic is testable without waiting.
public struct IngestRateMeter: Sendable {
    public struct Rates: Sendable, Equatable {
        /// Video frames per second, rounded to two decimals.
        public var frameRate: Double?
        /// Bits per second of coded video (FLV tag bodies, sequence headers excluded).
        public var videoBitRate: Int?
        /// Bits per second of coded audio (FLV tag bodies, sequence headers excluded).
        public var audioBitRate: Int?

        public init(frameRate: Double? = nil, videoBitRate: Int? = nil, audioBitRate: Int? = nil) {
            self.frameRate = frameRate
            self.videoBitRate = videoBitRate
            self.audioBitRate = audioBitRate
        }
    }

    struct Sample {
        var at: ContinuousClock.Instant
        var videoFrames: Int
        var videoBytes: Int
        var audioFrames: Int
        var audioBytes: Int

        init(_ statistics: StreamHub.Statistics, at: ContinuousClock.Instant) {
            self.at = at
            videoFrames = statistics.videoFramesIn
            videoBytes = statistics.videoBytesIn
            audioFrames = statistics.audioFramesIn
            audioBytes = statistics.audioBytesIn
        }

        /// True when `self` can follow `earlier` in one measurement: no counter went back.
        func follows(_ earlier: Sample) -> Bool {
            videoFrames >= earlier.videoFrames && videoBytes >= earlier.videoBytes
                && audioFrames >= earlier.audioFrames && audioBytes >= earlier.audioBytes
        }
    }

    public let window: Duration
    public let minimumSpan: Duration
    /// Oldest first; at most one sample older than `window`.
    private var samples: [Sample] = []

    public init(window: Duration = .seconds(5), minimumSpan: Duration = .milliseconds(1500)) {
        self.window = window
        self.minimumSpan = minimumSpan
    }

    /// Adds a sample of the hub's counters taken at `now` and returns the rates over the window.
    public mutating func record(_ statistics: StreamHub.Statistics, at now: ContinuousClock.Instant) -> Rates {
        let sample = Sample(statistics, at: now)
        if let last = samples.last, !sample.follows(last) || now < last.at {
            samples.removeAll()
        }
        samples.append(sample)
        while samples.count > 1, samples[1].at <= now - window {
            samples.removeFirst()
        }
        return Self.rates(from: samples[0], to: sample, minimumSpan: minimumSpan)
    }

    static func rates(from start: Sample, to end: Sample, minimumSpan: Duration) -> Rates {
        let span = end.at - start.at
        guard span >= minimumSpan, span > .zero else { return Rates() }
        let (seconds, attoseconds) = span.components
        let elapsed = Double(seconds) + Double(attoseconds) / 1e18
        var rates = Rates()
        if end.videoFrames > 0 {
            rates.frameRate = (Double(end.videoFrames - start.videoFrames) / elapsed * 100).rounded() / 100
            rates.videoBitRate = Int((Double(end.videoBytes - start.videoBytes) * 8 / elapsed).rounded())
        }
        if end.audioFrames > 0 {
            rates.audioBitRate = Int((Double(end.audioBytes - start.audioBytes) * 8 / elapsed).rounded())
        }
        return rates
    }
}
