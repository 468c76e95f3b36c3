import Media
import Metrics

/// What a pipeline reports to the metrics system (Prometheus on `/metrics`):
///
/// - `estuary_transcode_lag_seconds{stream}`: how far the renditions trail the source, in
///   media time (see `TranscodeStatistics.lagSeconds`); removed when the stream ends, so
///   the label set stays bounded by the live streams.
/// - `estuary_transcode_dropped_frames_total{reason}`: source frames not transcoded:
///   `lag` (shed because the worker fell behind) or `corrupt` (undecodable video or audio).
/// - `estuary_transcode_encoded_frames_total`: pictures encoded, over every rung.
///
/// Counters are fed the increase since the last update. Used on the worker thread only.
final class TranscodeMetrics {
    private let lag: Gauge
    private let droppedForLag = Counter(label: "estuary_transcode_dropped_frames_total", dimensions: [("reason", "lag")])
    private let droppedCorrupt = Counter(label: "estuary_transcode_dropped_frames_total", dimensions: [("reason", "corrupt")])
    private let encoded = Counter(label: "estuary_transcode_encoded_frames_total")
    private var reported = (lag: 0, corrupt: 0, encoded: 0)

    /// Video sequence headers refused (over the size limits, or a reconfiguration storm), by reason.
    static func refusedSequenceHeaders(reason: String) {
        Counter(label: "estuary_transcode_refused_sequence_headers_total", dimensions: [("reason", reason)]).increment()
    }

    init(stream: StreamPath) {
        lag = Gauge(label: "estuary_transcode_lag_seconds", dimensions: [("stream", "\(stream)")])
        lag.record(0)
    }

    func update(_ statistics: TranscodeStatistics) {
        lag.record(statistics.lagSeconds)
        let corrupt = statistics.corruptFrames + statistics.corruptAudioFrames
        let encodedFrames = statistics.renditions.values.reduce(0) { $0 + $1.framesEncoded }
        if statistics.lagDroppedFrames > reported.lag {
            droppedForLag.increment(by: Int64(statistics.lagDroppedFrames - reported.lag))
        }
        if corrupt > reported.corrupt {
            droppedCorrupt.increment(by: Int64(corrupt - reported.corrupt))
        }
        if encodedFrames > reported.encoded {
            encoded.increment(by: Int64(encodedFrames - reported.encoded))
        }
        reported = (max(reported.lag, statistics.lagDroppedFrames), max(reported.corrupt, corrupt), max(reported.encoded, encodedFrames))
    }

    /// The stream ended: its gauge goes.
    func finish() {
        lag.destroy()
    }
}

@available(*, unavailable)
extension TranscodeMetrics: Sendable {}
