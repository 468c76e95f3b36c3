import Metrics
import MetricsTestKit
import Session
import Testing

@testable import SRT

/// A stream's SRT series belong to its newest publisher: the one it took over, ending
/// after it started, does not remove them.
@Suite struct SRTStatisticsTests {
    @Test func aTakenOverPublishersEndLeavesTheNewOnesSeries() throws {
        let metrics = TestMetrics()
        let stream = "live/takeover-\(UInt32.random(in: 0...UInt32.max))"
        let old = SRTStatistics(direction: .receiving, traffic: SessionTraffic(), stream: stream, factory: metrics)
        let new = SRTStatistics(direction: .receiving, traffic: SessionTraffic(), stream: stream, factory: metrics)
        old.finish()
        #expect(throws: Never.self, "the old publisher's end removed the new one's RTT series") {
            _ = try metrics.expectGauge("estuary_srt_rtt_seconds", [("stream", stream)])
        }
        #expect(throws: Never.self) { _ = try metrics.expectCounter("estuary_srt_packets_lost_total", [("stream", stream)]) }
        new.finish()
        #expect(throws: (any Error).self, "the newest publisher's end left its series") {
            _ = try metrics.expectGauge("estuary_srt_rtt_seconds", [("stream", stream)])
        }
    }
}
