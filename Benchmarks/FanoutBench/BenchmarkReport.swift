import Foundation

/// The figures of one run, printed as one JSON object (`--json`) and as one human line.
struct BenchmarkReport: Sendable, Codable {
    var label: String
    var rtmpViewers: Int
    var flvViewers: Int
    var generatorThreads: Int
    /// The track whose first frame was waited for (`video` or `audio`).
    var firstFrameTrack: FirstFrameTrack
    var serverPIDs: [Int32]

    /// Viewers whose TCP connect failed.
    var connectFailures: Int
    /// Viewers that never received a first frame of the `--first-frame` track (connect failures included).
    var viewersWithoutFirstFrame: Int
    /// Viewers the server closed (or that failed) before the end of the window.
    var viewersClosedEarly: Int
    /// Up to five distinct failure reasons with their counts.
    var failureReasons: [String: Int]

    var windowSeconds: Double
    var deliveredMbitPerSecond: Double
    var meanViewerKbitPerSecond: Double
    var minViewerKbitPerSecond: Double

    var serverCPUSeconds: Double
    var serverCPUPercent: Double
    var serverCPUSecondsPerGbit: Double?
    /// The load generator's own CPU in the window, in percent of one core (not a server figure).
    var generatorCPUPercent: Double
    /// Everything else the machine did in the window (publisher, softirq work not charged to a
    /// process, and any foreign load such as builds), in percent of one core.
    var otherCPUPercent: Double?

    var rssBaselineKiB: Int
    var rssWindowMeanKiB: Int
    var rssWindowMaxKiB: Int
    var rssPerViewerKiB: Double

    /// Time from starting the TCP connect to the first frame of the `--first-frame` track (not a sequence header).
    var ttffP50Milliseconds: Double?
    var ttffP95Milliseconds: Double?
    var ttffMaxMilliseconds: Double?
    /// The same, to the first video keyframe (what a player needs to show a picture).
    var ttfkP50Milliseconds: Double?
    var ttfkP95Milliseconds: Double?

    /// TTFF per viewer kind (`rtmp`, `http-flv`), since the two paths differ in the server.
    var byKind: [String: KindFigures]

    /// Gaps over 1 s between media arrivals (after the first frame) that ended in the window,
    /// plus viewers silent for over 1 s at its end.
    var stallsInWindow: Int
    /// The same over the whole run, connect phase included.
    var stallsTotal: Int
    var maxGapMilliseconds: Double
    var videoMessagesInWindow: Int
    var audioMessagesInWindow: Int

    /// One line for people.
    var summary: String {
        func format(_ value: Double?, _ digits: Int = 0) -> String {
            guard let value else { return "n/a" }
            return String(format: "%.\(digits)f", value)
        }
        let name = self.label.isEmpty ? "server" : self.label
        return "\(name) rtmp=\(self.rtmpViewers) flv=\(self.flvViewers): "
            + "\(format(self.deliveredMbitPerSecond, 1)) Mbit/s (min viewer \(format(self.minViewerKbitPerSecond)) kbit/s), "
            + "server CPU \(format(self.serverCPUPercent))% = \(format(self.serverCPUSecondsPerGbit, 3)) CPU-s/Gbit, "
            + "RSS +\(format(self.rssPerViewerKiB, 1)) KiB/viewer, "
            + "TTFF p50 \(format(self.ttffP50Milliseconds)) ms p95 \(format(self.ttffP95Milliseconds)) ms, "
            + "stalls \(self.stallsInWindow) (all \(self.stallsTotal)), "
            + "no-frame \(self.viewersWithoutFirstFrame), closed \(self.viewersClosedEarly), "
            + "generator CPU \(format(self.generatorCPUPercent))%, other CPU \(format(self.otherCPUPercent))%"
    }
}

/// The figures of one kind of viewer.
struct KindFigures: Sendable, Codable {
    var viewers: Int
    var meanKbitPerSecond: Double
    var ttffP50Milliseconds: Double?
    var ttffP95Milliseconds: Double?
    var stallsInWindow: Int
}

/// The nearest-rank percentile (`fraction` in 0...1) of `sorted`, or nil when it is empty.
func percentile(_ sorted: [Double], _ fraction: Double) -> Double? {
    guard !sorted.isEmpty else { return nil }
    let rank = Int((fraction * Double(sorted.count)).rounded(.up))
    return sorted[min(max(rank, 1), sorted.count) - 1]
}
