import Cluster
import GRDB

/// A row of `renditions`: one rung of a stream's transcode job and the transcoder it is
/// placed on. All rungs of a stream share one transcoder (the job decodes the source once).
struct RenditionRecord: Codable, Sendable, Hashable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "renditions"

    var id: Int64?
    var streamID: Int64
    var rung: String
    var width: Int
    var height: Int
    var bitRate: Int
    var transcoderNode: String?
    var state: RenditionState
    /// The draining transcoder this job was moved off, until the new one reports it running:
    /// the new one takes over from it at a source keyframe (`TranscodeAssignment.takesOverFrom`).
    var handoverFrom: String?

    init(streamID: Int64, rung: RungSpec, transcoderNode: String?) {
        self.streamID = streamID
        self.rung = rung.name
        self.width = rung.width
        self.height = rung.height
        self.bitRate = rung.bitRate
        self.transcoderNode = transcoderNode
        self.state = transcoderNode == nil ? .unplaced : .assigned
    }

    var spec: RungSpec { RungSpec(name: rung, width: width, height: height, bitRate: bitRate) }

    mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }

    enum CodingKeys: String, CodingKey {
        case id, rung, width, height, state
        case streamID = "stream_id"
        case bitRate = "bit_rate"
        case transcoderNode = "transcoder_node"
        case handoverFrom = "handover_from"
    }

    enum Columns {
        static let streamID = Column(CodingKeys.streamID)
        static let rung = Column(CodingKeys.rung)
        static let transcoderNode = Column(CodingKeys.transcoderNode)
        static let state = Column(CodingKeys.state)
        static let handoverFrom = Column(CodingKeys.handoverFrom)
    }
}

extension DerivableRequest<RenditionRecord> {
    func ofStream(_ streamID: Int64) -> Self { filter(RenditionRecord.Columns.streamID == streamID) }

    func on(transcoder nodeID: String) -> Self { filter(RenditionRecord.Columns.transcoderNode == nodeID) }

    /// Renditions whose job should run (not ended).
    func active() -> Self { filter(RenditionRecord.Columns.state != RenditionState.ended.rawValue) }

    func unplaced() -> Self { filter(RenditionRecord.Columns.state == RenditionState.unplaced.rawValue) }
}
