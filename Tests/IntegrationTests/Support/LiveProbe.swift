import Testing

extension Scenario {
    /// ffprobe of `seconds` of a live stream (one that never ends by itself): streams and
    /// packets, or nil (an issue recorded) when ffprobe fails.
    func probeLive(_ url: String, name: String, seconds: Int = 3, sourceLocation: SourceLocation = #_sourceLocation) async throws -> ProbeReport? {
        let probe = try await self.run(
            "ffprobe",
            ["-v", "error", "-show_entries", "stream=index,codec_type,codec_name,width,height,sample_rate:packet=stream_index,dts,flags",
             "-of", "json", "-read_intervals", "%+\(seconds)", url],
            name: name, timeout: .seconds(30)
        )
        self.check(probe.succeeded, "ffprobe of \(url): \(probe)", sourceLocation: sourceLocation)
        return probe.succeeded ? try ProbeReport.decode(probe.stdout) : nil
    }

    /// What a viewer of a live H.264 + AAC stream must see: both codecs (and the width when
    /// given), at least `minVideoPackets` video packets, a keyframe first, DTS never backwards.
    func checkLivePlayback(
        _ report: ProbeReport, _ label: String, minVideoPackets: Int, width: Int? = nil, videoCodec: String = "h264", sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let video = report.packets(of: report.video)
        self.check(report.video?.codecName == videoCodec && (width == nil || report.video?.width == width), "\(label): video \(String(describing: report.video))", sourceLocation: sourceLocation)
        self.check(report.audio?.codecName == "aac", "\(label): audio \(String(describing: report.audio))", sourceLocation: sourceLocation)
        self.check(video.count >= minVideoPackets, "\(label): \(video.count) video packets, expected \(minVideoPackets)+", sourceLocation: sourceLocation)
        self.check(video.first?.isKeyframe == true, "\(label): the stream does not start on a keyframe", sourceLocation: sourceLocation)
        self.check(report.dtsRegressions(of: report.video).isEmpty, "\(label): DTS regressions \(report.dtsRegressions(of: report.video).prefix(3))", sourceLocation: sourceLocation)
    }
}
