import CSRT
import Metrics

/// An SRT publisher's link, sampled every second from libsrt (`srt_bstats`) into per-stream
/// metrics, removed when the session ends:
///
/// - `estuary_srt_rtt_seconds{stream}`: the smoothed round-trip time;
/// - `estuary_srt_receive_bits_per_second{stream}`: the receiving rate;
/// - `estuary_srt_packets_lost_total{stream}`, `estuary_srt_packets_retransmitted_total{stream}`,
///   `estuary_srt_packets_dropped_total{stream}`: packets the receiver found missing, received
///   again, and gave up on (too late for the latency), since the session started.
final class SRTStatistics {
    private let rtt: Gauge
    private let rate: Gauge
    private let lost: Gauge
    private let retransmitted: Gauge
    private let dropped: Gauge

    init(stream: String) {
        let dimensions = [("stream", stream)]
        rtt = Gauge(label: "estuary_srt_rtt_seconds", dimensions: dimensions)
        rate = Gauge(label: "estuary_srt_receive_bits_per_second", dimensions: dimensions)
        lost = Gauge(label: "estuary_srt_packets_lost_total", dimensions: dimensions)
        retransmitted = Gauge(label: "estuary_srt_packets_retransmitted_total", dimensions: dimensions)
        dropped = Gauge(label: "estuary_srt_packets_dropped_total", dimensions: dimensions)
    }

    func sample(_ socket: SRTSOCKET) {
        var performance = SRT_TRACEBSTATS()
        // `clear` 0: the interval counters are never reset, so they count from the session's start.
        guard srt_bstats(socket, &performance, 0) == 0 else { return }
        rtt.record(performance.msRTT / 1000)
        rate.record(performance.mbpsRecvRate * 1_000_000)
        lost.record(Double(performance.pktRcvLossTotal))
        retransmitted.record(Double(performance.pktRcvRetrans))
        dropped.record(Double(performance.pktRcvDropTotal))
    }

    func finish() {
        for gauge in [rtt, rate, lost, retransmitted, dropped] { gauge.destroy() }
    }
}

@available(*, unavailable)
extension SRTStatistics: Sendable {}
