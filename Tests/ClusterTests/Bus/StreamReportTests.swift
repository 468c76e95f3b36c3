import Testing

@testable import Cluster

/// What several roles of one node say of one stream becomes one report.
struct StreamReportTests {
    @Test func reportsOfOneStreamMergeInFirstSeenOrder() {
        let facts = StreamFacts(container: "flv", videoCodec: "h264")
        let merged = StreamReport.merged([
            .publishing(app: "abr", name: "demo", facts: facts, bytes: 10),
            .playing(app: "live", name: "cam", viewers: 4),
            .transcoding(app: "abr", name: "demo", rungs: ["480p"]),
            .playing(app: "abr", name: "demo", viewers: 2),
            .playing(app: "abr", name: "demo", viewers: 9),
        ])
        #expect(merged == [
            StreamReport(app: "abr", name: "demo", publishing: facts, bytes: 10, viewers: 2, rungs: ["480p"]),
            .playing(app: "live", name: "cam", viewers: 4),
        ])
        #expect(StreamReport.merged([]).isEmpty)
    }
}
