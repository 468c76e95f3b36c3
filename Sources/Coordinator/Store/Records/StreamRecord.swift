import Cluster
import Foundation
import GRDB
import Media

/// A row of `streams`: one publish session of `app/name` on an ingest node, with its
/// ffprobe-like facts. At most one row per app/name is live (a partial unique index).
struct StreamRecord: Codable, Sendable, Hashable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "streams"

    var id: Int64?
    var app: String
    var name: String
    var state: StreamState
    var ingestNode: String
    var container: String
    var videoCodec: String?
    var videoProfile: String?
    var width: Int?
    var height: Int?
    var frameRate: Double?
    var videoBitRate: Int?
    var audioCodec: String?
    var audioBitRate: Int?
    var audioSampleRate: Int?
    var audioChannels: Int?
    var startedAt: Date
    var endedAt: Date?
    /// Bytes received from the publisher, as last reported by the ingest.
    var bytes: Int64
    /// The encoder-made renditions (multitrack), comma-separated; nil when none.
    var tracks: String?

    enum StreamState: String, Codable, Sendable, Hashable {
        case live, ended
    }

    init(app: String, name: String, ingestNode: String, facts: StreamFacts, startedAt: Date) {
        self.app = app
        self.name = name
        self.state = .live
        self.ingestNode = ingestNode
        self.container = facts.container
        self.startedAt = startedAt
        self.bytes = 0
        self.facts = facts
    }

    /// The ffprobe-like facts, as the columns hold them.
    var facts: StreamFacts {
        get {
            var facts = StreamFacts(
                container: container, videoCodec: videoCodec, videoProfile: videoProfile, width: width, height: height,
                frameRate: frameRate, videoBitRate: videoBitRate, audioCodec: audioCodec, audioBitRate: audioBitRate,
                audioSampleRate: audioSampleRate, audioChannels: audioChannels
            )
            facts.tracks = tracks.map { $0.split(separator: ",").map(String.init) }
            return facts
        }
        set {
            container = newValue.container
            videoCodec = newValue.videoCodec
            videoProfile = newValue.videoProfile
            width = newValue.width
            height = newValue.height
            frameRate = newValue.frameRate
            videoBitRate = newValue.videoBitRate
            audioCodec = newValue.audioCodec
            audioBitRate = newValue.audioBitRate
            audioSampleRate = newValue.audioSampleRate
            audioChannels = newValue.audioChannels
            tracks = Self.tracksColumn(newValue.tracks)
        }
    }

    /// What the `tracks` column holds for a report's list: the valid names among the first
    /// `StreamFacts.maxTracks`, sorted, comma-separated; nil for none.
    static func tracksColumn(_ tracks: [String]?) -> String? {
        let names = Set((tracks ?? []).prefix(StreamFacts.maxTracks).filter(StreamPath.isValidComponent)).sorted()
        return names.isEmpty ? nil : names.joined(separator: ",")
    }

    mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }

    enum CodingKeys: String, CodingKey {
        case id, app, name, state, container, width, height, bytes, tracks
        case ingestNode = "ingest_node"
        case videoCodec = "video_codec"
        case videoProfile = "video_profile"
        case frameRate = "frame_rate"
        case videoBitRate = "video_bit_rate"
        case audioCodec = "audio_codec"
        case audioBitRate = "audio_bit_rate"
        case audioSampleRate = "audio_sample_rate"
        case audioChannels = "audio_channels"
        case startedAt = "started_at"
        case endedAt = "ended_at"
    }

    enum Columns {
        static let id = Column(CodingKeys.id)
        static let app = Column(CodingKeys.app)
        static let name = Column(CodingKeys.name)
        static let state = Column(CodingKeys.state)
        static let ingestNode = Column(CodingKeys.ingestNode)
        static let startedAt = Column(CodingKeys.startedAt)
    }
}

extension DerivableRequest<StreamRecord> {
    func live() -> Self { filter(StreamRecord.Columns.state == StreamRecord.StreamState.live.rawValue) }

    func path(app: String, name: String) -> Self {
        filter(StreamRecord.Columns.app == app && StreamRecord.Columns.name == name)
    }

    func ingestedBy(_ nodeID: String) -> Self { filter(StreamRecord.Columns.ingestNode == nodeID) }
}
