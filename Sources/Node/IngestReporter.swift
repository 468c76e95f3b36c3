import Cluster
import LibAV
import Media
import NIOCore

/// What an ingest tells the coordinator about each stream it holds: the codec facts from
/// its configuration records, and the frame rate and per-track bit rates measured over the
/// last seconds of heartbeats from the frames and bytes the hub took in (`IngestRateMeter`).
actor IngestReporter {
    private var meters: [RenditionPath: IngestRateMeter] = [:]

    /// Reports `hubs`, the ingest's own published hubs that have not ended. A hub whose
    /// publisher dropped is still reported through the grace period (its rates fall to
    /// zero): the stream goes on for its viewers, and for the coordinator, until the hub
    /// ends. Otherwise the coordinator would end the session at the next heartbeat and
    /// stop its transcode job under the rung viewers of a publisher about to reconnect.
    func report(_ hubs: [StreamHub], tracks: [StreamHub] = []) -> [StreamReport] {
        let now = ContinuousClock.now
        // Each stream's encoder-made renditions, by name.
        var trackNames: [StreamPath: [String]] = [:]
        for track in tracks where !track.isEnded {
            guard let name = track.path.rendition else { continue }
            trackNames[track.path.stream, default: []].append(name)
        }
        var reports: [StreamReport] = []
        var seen = Set<RenditionPath>()
        for hub in hubs.sorted(by: { "\($0.path)" < "\($1.path)" }) where !hub.isEnded {
            let path = hub.path
            seen.insert(path)
            let statistics = hub.statistics
            var facts = Self.facts(of: hub)
            let rates = meters[path, default: IngestRateMeter()].record(statistics, at: now)
            facts.frameRate = rates.frameRate
            facts.videoBitRate = rates.videoBitRate
            facts.audioBitRate = rates.audioBitRate
            facts.tracks = trackNames[path.stream].map { Array($0.sorted().prefix(StreamFacts.maxTracks)) }
            reports.append(.publishing(app: path.stream.app, name: path.stream.name, facts: facts, bytes: Int64(statistics.bytesIn)))
        }
        meters = meters.filter { seen.contains($0.key) }
        return reports
    }

    /// Codec, profile, size, sample rate and channels, as ffprobe would name them. The frame
    /// rate is measured (`report()`), never taken from the SPS's timing information.
    static func facts(of hub: StreamHub) -> StreamFacts {
        var facts = StreamFacts(container: "flv")
        let records = hub.configurationRecords
        if let video = records.video, let track = try? VideoTrack(sequenceHeader: video) {
            facts.videoCodec = switch track.codec { case .hevc: "hevc"; case .av1: "av1"; case .vp9: "vp9"; case .avc: "h264" }
            facts.width = track.width
            facts.height = track.height
            if track.codec == .avc, let record = try? AVCDecoderConfigurationRecord(from: track.decoderConfiguration) {
                facts.videoProfile = Self.profileName(record.profileIndication)
            }
        }
        if let audio = records.audio, let track = try? AudioTrack(sequenceHeader: audio) {
            facts.audioCodec = track.codec == .opus ? "opus" : "aac"
            facts.audioSampleRate = track.sampleRate
            facts.audioChannels = track.channelCount
        }
        return facts
    }

    private static func profileName(_ indication: UInt8) -> String {
        switch indication {
        case 66: "Constrained Baseline"
        case 77: "Main"
        case 88: "Extended"
        case 100: "High"
        case 110: "High 10"
        case 122: "High 4:2:2"
        case 244: "High 4:4:4 Predictive"
        case 44: "CAVLC 4:4:4"
        default: "profile \(indication)"
        }
    }
}
