/// Availability latency of one variant as one player saw it, over the window's frames.
struct LatencyFigures: Codable, Sendable {
    /// Video frames the publisher sent with a DTS in the window.
    var framesInWindow: Int
    /// Of those, frames the player received (matched exactly on PTS in milliseconds).
    var framesMatched: Int
    var matchedFraction: Double
    /// Received samples with a PTS in the window that match no sent frame (should be 0).
    var receivedUnmatched: Int
    /// Frames received in more than one part or segment (should be 0).
    var duplicates: Int
    /// Matched frames whose sync-sample flag disagrees with the FLV keyframe flag (should be 0).
    var keyframeMismatches: Int
    /// Availability − send time, milliseconds.
    var minMilliseconds: Double
    var meanMilliseconds: Double
    var p50Milliseconds: Double
    var p95Milliseconds: Double
    var p99Milliseconds: Double
    var maxMilliseconds: Double
    /// Including the download of the part or segment.
    var fetchedP50Milliseconds: Double
    var fetchedP95Milliseconds: Double
    /// Parts (LL-HLS) or segments (classic) in the window.
    var units: Int
    var unitMeanMilliseconds: Double
    var unitMaxMilliseconds: Double
    /// Availability of a unit − send time of the frame right after its last one (the frame
    /// whose arrival closes it): the server's and the player's own delay.
    var overheadP50Milliseconds: Double?
    var overheadP95Milliseconds: Double?
    /// Playlist responses in the window that brought more than one new unit (the player
    /// fell behind; 0 in steady state).
    var multiUnitResponses: Int
}

/// The N load viewers together.
struct ViewerFigures: Codable, Sendable {
    var viewers: Int
    var viewersWithParts: Int
    var partsPerViewerPerSecondMean: Double
    var partsPerViewerPerSecondMin: Double
    var requests: Int
    var megabytesReceived: Double
    var errors: Int
    var errorSamples: [String]
    /// Frame latency over every viewer, each part's frames taken from the parsing player.
    var framesMeasured: Int
    var latencyP50Milliseconds: Double?
    var latencyP95Milliseconds: Double?
    var latencyMaxMilliseconds: Double?
    /// A viewer's availability of a part − the parsing player's, milliseconds.
    var spreadP50Milliseconds: Double?
    var spreadP95Milliseconds: Double?
    var spreadMaxMilliseconds: Double?
}

/// Nearest-rank percentile of sorted values.
func percentile(_ sorted: [Double], _ fraction: Double) -> Double? {
    guard !sorted.isEmpty else { return nil }
    let rank = Int((fraction * Double(sorted.count)).rounded(.up))
    return sorted[min(max(rank, 1), sorted.count) - 1]
}

struct Analysis {
    let sent: [SentFrame]
    /// DTS window, milliseconds.
    let window: Range<Int64>
    private let sentByPTS: [Int64: SentFrame]
    /// Index in `sent` by DTS.
    private let sentIndexByDTS: [Int64: Int]

    init(sent: [SentFrame], window: Range<Int64>) {
        let ordered = sent.sorted { $0.dts < $1.dts }
        self.sent = ordered
        self.window = window
        self.sentByPTS = Dictionary(ordered.map { ($0.pts, $0) }, uniquingKeysWith: { first, _ in first })
        self.sentIndexByDTS = Dictionary(ordered.enumerated().map { ($1.dts, $0) }, uniquingKeysWith: { first, _ in first })
    }

    var framesInWindow: [SentFrame] { sent.filter { window.contains($0.dts) } }

    func latency(of player: PlayerResult) -> LatencyFigures? {
        var byPTS: [Int64: FrameArrival] = [:]
        var duplicates = 0
        var unmatched = 0
        for frame in player.frames {
            if byPTS[frame.pts] != nil {
                duplicates += 1
                continue
            }
            byPTS[frame.pts] = frame
            if sentByPTS[frame.pts] == nil, window.contains(frame.pts) { unmatched += 1 }
        }
        let expected = framesInWindow
        var latencies: [Double] = []
        var fetched: [Double] = []
        var keyframeMismatches = 0
        for frame in expected {
            guard let arrival = byPTS[frame.pts] else { continue }
            latencies.append((arrival.availableAt - frame.sentAt).milliseconds)
            fetched.append((arrival.fetchedAt - frame.sentAt).milliseconds)
            if arrival.isKeyframe != frame.isKeyframe { keyframeMismatches += 1 }
        }
        guard !latencies.isEmpty else { return nil }
        latencies.sort()
        fetched.sort()

        var durations: [Double] = []
        var overheads: [Double] = []
        var multi = 0
        for unit in player.units {
            guard let last = unit.samples.max(by: { $0.dts < $1.dts }), window.contains(last.dts) else { continue }
            durations.append(Double(unit.samples.reduce(0) { $0 + $1.duration }))
            if unit.newInResponse > 1 { multi += 1 }
            // The unit closed when the next video frame reached the server.
            if let index = sentIndexByDTS[last.dts], index + 1 < sent.count {
                overheads.append((unit.availableAt - sent[index + 1].sentAt).milliseconds)
            }
        }
        overheads.sort()
        return LatencyFigures(
            framesInWindow: expected.count,
            framesMatched: latencies.count,
            matchedFraction: Double(latencies.count) / Double(max(expected.count, 1)),
            receivedUnmatched: unmatched,
            duplicates: duplicates,
            keyframeMismatches: keyframeMismatches,
            minMilliseconds: latencies.first ?? 0,
            meanMilliseconds: latencies.reduce(0, +) / Double(latencies.count),
            p50Milliseconds: percentile(latencies, 0.50) ?? 0,
            p95Milliseconds: percentile(latencies, 0.95) ?? 0,
            p99Milliseconds: percentile(latencies, 0.99) ?? 0,
            maxMilliseconds: latencies.last ?? 0,
            fetchedP50Milliseconds: percentile(fetched, 0.50) ?? 0,
            fetchedP95Milliseconds: percentile(fetched, 0.95) ?? 0,
            units: durations.count,
            unitMeanMilliseconds: durations.isEmpty ? 0 : durations.reduce(0, +) / Double(durations.count),
            unitMaxMilliseconds: durations.max() ?? 0,
            overheadP50Milliseconds: percentile(overheads, 0.50),
            overheadP95Milliseconds: percentile(overheads, 0.95),
            multiUnitResponses: multi
        )
    }

    /// The load viewers' figures; `reference` is the parsing LL-HLS player (which frames
    /// each part holds, and when it saw each part).
    func viewers(_ results: [LightViewer.Result], reference: PlayerResult, from: ContinuousClock.Instant, to: ContinuousClock.Instant) -> ViewerFigures {
        var framesOfPart: [PartKey: [SentFrame]] = [:]
        var referenceTime: [PartKey: ContinuousClock.Instant] = [:]
        for unit in reference.units {
            referenceTime[unit.key] = unit.availableAt
            framesOfPart[unit.key] = unit.samples.compactMap { sample in
                guard let frame = sentByPTS[sample.pts], window.contains(frame.dts) else { return nil }
                return frame
            }
        }
        let seconds = max((to - from).milliseconds / 1000, 0.001)
        var latencies: [Double] = []
        var spreads: [Double] = []
        var rates: [Double] = []
        var errors: [String] = []
        var requests = 0
        var bytes = 0
        for viewer in results {
            requests += viewer.requests
            bytes += viewer.bytes
            errors.append(contentsOf: viewer.errors)
            var inWindow = 0
            for part in viewer.parts {
                if part.availableAt >= from, part.availableAt <= to { inWindow += 1 }
                if let frames = framesOfPart[part.key] {
                    for frame in frames { latencies.append((part.availableAt - frame.sentAt).milliseconds) }
                    if !frames.isEmpty, let seen = referenceTime[part.key] {
                        spreads.append((part.availableAt - seen).milliseconds)
                    }
                }
            }
            rates.append(Double(inWindow) / seconds)
        }
        latencies.sort()
        spreads.sort()
        return ViewerFigures(
            viewers: results.count,
            viewersWithParts: results.filter { !$0.parts.isEmpty }.count,
            partsPerViewerPerSecondMean: rates.isEmpty ? 0 : rates.reduce(0, +) / Double(rates.count),
            partsPerViewerPerSecondMin: rates.min() ?? 0,
            requests: requests,
            megabytesReceived: Double(bytes) / 1e6,
            errors: errors.count,
            errorSamples: Array(Set(errors).sorted().prefix(5)),
            framesMeasured: latencies.count,
            latencyP50Milliseconds: percentile(latencies, 0.50),
            latencyP95Milliseconds: percentile(latencies, 0.95),
            latencyMaxMilliseconds: latencies.last,
            spreadP50Milliseconds: percentile(spreads, 0.50),
            spreadP95Milliseconds: percentile(spreads, 0.95),
            spreadMaxMilliseconds: spreads.last
        )
    }
}
