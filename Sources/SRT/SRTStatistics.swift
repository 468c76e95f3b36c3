import CSRT
import Metrics

/// An SRT publisher's link, sampled every second from libsrt (`srt_bstats`) into per-stream
/// metrics, removed when the session ends:
///
/// - `estuary_srt_rtt_seconds{stream}`: the smoothed round-trip time;
/// - `estuary_srt_receive_bits_per_second{stream}`: the receiving rate;
/// - `estuary_srt_packets_lost_total{stream}`, `estuary_srt_packets_retransmitted_total{stream}`,
///   `estuary_srt_packets_dropped_total{stream}`: packets the receiver found missing, received
///   again, and gave up on (too late for the latency): counters, advanced by what libsrt's
///   totals grew since the last sample.
final class SRTStatistics {
    private let rtt: Gauge
    private let rate: Gauge
    private let lost: Counter
    private let retransmitted: Counter
    private let dropped: Counter
    /// libsrt's totals at the last sample: lost, retransmitted, dropped.
    private var counted: (lost: Int64, retransmitted: Int64, dropped: Int64) = (0, 0, 0)

    init(stream: String) {
        let dimensions = [("stream", stream)]
        rtt = Gauge(label: "estuary_srt_rtt_seconds", dimensions: dimensions)
        rate = Gauge(label: "estuary_srt_receive_bits_per_second", dimensions: dimensions)
        lost = Counter(label: "estuary_srt_packets_lost_total", dimensions: dimensions)
        retransmitted = Counter(label: "estuary_srt_packets_retransmitted_total", dimensions: dimensions)
        dropped = Counter(label: "estuary_srt_packets_dropped_total", dimensions: dimensions)
    }

    func sample(_ socket: SRTSOCKET) {
        var performance = SRT_TRACEBSTATS()
        // `clear` 0: the interval counters are never reset, so they count from the session's start.
        guard srt_bstats(socket, &performance, 0) == 0 else { return }
        rtt.record(performance.msRTT / 1000)
        rate.record(performance.mbpsRecvRate * 1_000_000)
        let totals = (lost: Int64(performance.pktRcvLossTotal), retransmitted: Int64(performance.pktRcvRetrans), dropped: Int64(performance.pktRcvDropTotal))
        lost.increment(by: max(0, totals.lost - counted.lost))
        retransmitted.increment(by: max(0, totals.retransmitted - counted.retransmitted))
        dropped.increment(by: max(0, totals.dropped - counted.dropped))
        counted = totals
    }

    func finish() {
        rtt.destroy()
        rate.destroy()
        lost.destroy()
        retransmitted.destroy()
        dropped.destroy()
    }
}

@available(*, unavailable)
extension SRTStatistics: Sendable {}
