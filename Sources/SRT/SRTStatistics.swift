import CSRT
import Media
import Metrics
import Session
import Synchronization

/// An SRT caller's link, sampled every second from libsrt (`srt_bstats`) onto its session's
/// entry (`SessionTraffic.link`, the admin API's `link`) and, for a publisher, into
/// per-stream metrics removed when the session ends:
///
/// - `estuary_srt_rtt_seconds{stream}`: the smoothed round-trip time;
/// - `estuary_srt_receive_bits_per_second{stream}`: the receiving rate;
/// - `estuary_srt_packets_lost_total{stream}`, `estuary_srt_packets_retransmitted_total{stream}`,
///   `estuary_srt_packets_dropped_total{stream}`: packets the receiver found missing, received
///   again, and gave up on (too late for the latency): counters, advanced by what libsrt's
///   totals grew since the last sample.
///
/// A player's link is on its session's entry only: a stream has many players, and a series
/// per player would be unbounded.
///
/// A stream's series are one set whoever publishes it: a publisher that takes the stream
/// over from an idle one shares them (the metrics backend hands out the same series for the
/// same label). Only the newest publisher's end removes them (`owners`): the one it took
/// over, ending after it started, would otherwise remove the series the new one records to.
final class SRTStatistics {
    enum Direction {
        /// A publisher: what the node received.
        case receiving
        /// A player: what the node sent.
        case sending
    }

    private struct StreamMetrics {
        /// The series' label, and the key of `owners`.
        let stream: String
        let rtt: Gauge
        let rate: Gauge
        let lost: Counter
        let retransmitted: Counter
        let dropped: Counter
    }

    private let direction: Direction
    private let traffic: SessionTraffic
    private let metrics: StreamMetrics?
    /// Each stream's newest publisher's statistics, which alone remove its series: at most
    /// one entry per stream published over SRT now.
    private static let owners = Mutex<[String: ObjectIdentifier]>([:])
    /// libsrt's totals at the last sample.
    private var counted = LinkStatistics(rttSeconds: 0, bitsPerSecond: 0, packetsLost: 0, packetsRetransmitted: 0, packetsDropped: 0)
    private var sampledAt = ContinuousClock.now

    /// `stream`: the per-stream metrics' label (publishers); nil for none. `factory`: where
    /// they go (the global one but in tests).
    init(direction: Direction, traffic: SessionTraffic, stream: String?, factory: any MetricsFactory = MetricsSystem.factory) {
        self.direction = direction
        self.traffic = traffic
        metrics = stream.map { stream in
            let dimensions = [("stream", stream)]
            return StreamMetrics(
                stream: stream,
                rtt: Gauge(label: "estuary_srt_rtt_seconds", dimensions: dimensions, factory: factory),
                rate: Gauge(label: "estuary_srt_receive_bits_per_second", dimensions: dimensions, factory: factory),
                lost: Counter(label: "estuary_srt_packets_lost_total", dimensions: dimensions, factory: factory),
                retransmitted: Counter(label: "estuary_srt_packets_retransmitted_total", dimensions: dimensions, factory: factory),
                dropped: Counter(label: "estuary_srt_packets_dropped_total", dimensions: dimensions, factory: factory)
            )
        }
        if let stream {
            let id = ObjectIdentifier(self)
            Self.owners.withLock { $0[stream] = id }
        }
    }

    /// Samples the link if a second has passed since the last sample.
    func sampleIfDue(_ socket: SRTSOCKET, now: ContinuousClock.Instant = .now) {
        guard now - sampledAt >= .seconds(1) else { return }
        sampledAt = now
        sample(socket)
    }

    func sample(_ socket: SRTSOCKET) {
        var performance = SRT_TRACEBSTATS()
        // `clear` 0: the interval counters are never reset, so they count from the session's start.
        guard srt_bstats(socket, &performance, 0) == 0 else { return }
        let link: LinkStatistics
        switch direction {
        case .receiving:
            link = LinkStatistics(
                rttSeconds: performance.msRTT / 1000, bitsPerSecond: performance.mbpsRecvRate * 1_000_000,
                packetsLost: Int(performance.pktRcvLossTotal), packetsRetransmitted: Int(performance.pktRcvRetrans),
                packetsDropped: Int(performance.pktRcvDropTotal)
            )
        case .sending:
            link = LinkStatistics(
                rttSeconds: performance.msRTT / 1000, bitsPerSecond: performance.mbpsSendRate * 1_000_000,
                packetsLost: Int(performance.pktSndLossTotal), packetsRetransmitted: Int(performance.pktRetransTotal),
                packetsDropped: Int(performance.pktSndDropTotal)
            )
        }
        traffic.update(link: link)
        if let metrics {
            metrics.rtt.record(link.rttSeconds)
            metrics.rate.record(link.bitsPerSecond)
            metrics.lost.increment(by: max(0, link.packetsLost - counted.packetsLost))
            metrics.retransmitted.increment(by: max(0, link.packetsRetransmitted - counted.packetsRetransmitted))
            metrics.dropped.increment(by: max(0, link.packetsDropped - counted.packetsDropped))
        }
        counted = link
    }

    /// The session ended: its stream's series go, unless a newer publisher of the stream
    /// records to them now.
    func finish() {
        guard let metrics else { return }
        let id = ObjectIdentifier(self)
        let newest = Self.owners.withLock { owners in
            guard owners[metrics.stream] == id else { return false }
            owners[metrics.stream] = nil
            return true
        }
        guard newest else { return }
        metrics.rtt.destroy()
        metrics.rate.destroy()
        metrics.lost.destroy()
        metrics.retransmitted.destroy()
        metrics.dropped.destroy()
    }
}

@available(*, unavailable)
extension SRTStatistics: Sendable {}
