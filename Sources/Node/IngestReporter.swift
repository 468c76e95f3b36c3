import Cluster
import LibAV
import Media
import NIOCore

/// What an ingest tells the coordinator about each stream it holds: the codec facts from
/// its configuration records, and bit rates measured between heartbeats from the bytes
/// the hub took in.
actor IngestReporter {
    private let registry: StreamRegistry
    private var previous: [StreamPath: (bytes: Int, at: ContinuousClock.Instant)] = [:]

    init(registry: StreamRegistry) {
        self.registry = registry
    }

    func report() async -> CoordinatorLink.Report {
        let now = ContinuousClock.now
        var reports: [StreamReport] = []
        var seen = Set<StreamPath>()
        for (path, hub) in await registry.streams where hub.hasPublisher {
            seen.insert(path)
            let statistics = hub.statistics
            var facts = Self.facts(of: hub)
            if let last = previous[path] {
                let seconds = Double((now - last.at).components.seconds) + Double((now - last.at).components.attoseconds) / 1e18
                if seconds > 0.2 {
                    facts.videoBitRate = Int(Double(statistics.bytesIn - last.bytes) * 8 / seconds)
                }
            }
            previous[path] = (statistics.bytesIn, now)
            reports.append(.publishing(app: path.app, name: path.name, facts: facts, bytes: Int64(statistics.bytesIn)))
        }
        previous = previous.filter { seen.contains($0.key) }
        return .init(load: Double(reports.count), streams: reports)
    }

    /// Codec, profile, size, rate and channels, as ffprobe would name them.
    static func facts(of hub: StreamHub) -> StreamFacts {
        var facts = StreamFacts(container: "flv")
        let records = hub.configurationRecords
        if let video = records.video, let track = try? VideoTrack(sequenceHeader: video) {
            facts.videoCodec = track.codec == .hevc ? "hevc" : "h264"
            facts.width = track.width
            facts.height = track.height
            facts.frameRate = track.frameRate
            if track.codec == .avc, let record = try? AVCDecoderConfigurationRecord(from: track.decoderConfiguration) {
                facts.videoProfile = Self.profileName(record.profileIndication)
            }
        }
        if let audio = records.audio, let track = try? AudioTrack(sequenceHeader: audio) {
            facts.audioCodec = "aac"
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
        default: "profile \(indication)"
        }
    }
}
