import Cluster
import Foundation

/// A live stream as the admin API lists it: what ffprobe would say of it, where it runs,
/// who watches it.
public struct StreamSummary: Codable, Sendable, Hashable {
    public var id: Int64
    public var app: String
    public var name: String
    /// `live` or `ended`.
    public var state: String
    public var ingestNode: String
    public var facts: StreamFacts
    public var renditions: [RenditionSummary]
    /// Viewers per relay node id, from the relays' last heartbeats.
    public var viewers: [String: Int]
    /// All viewers over all relays.
    public var totalViewers: Int
    public var startedAt: Date
    public var uptimeSeconds: Double
    /// Bytes received from the publisher.
    public var bytes: Int64

    init(_ record: StreamRecord, renditions: [RenditionRecord], viewers: [String: Int], now: Date) {
        id = record.id ?? 0
        app = record.app
        name = record.name
        state = record.state.rawValue
        ingestNode = record.ingestNode
        facts = record.facts
        self.renditions = renditions.map(RenditionSummary.init)
        self.viewers = viewers
        totalViewers = viewers.values.reduce(0, +)
        startedAt = record.startedAt
        uptimeSeconds = max(0, now.timeIntervalSince(record.startedAt))
        bytes = record.bytes
    }
}

/// One rendition of a stream in the admin API.
public struct RenditionSummary: Codable, Sendable, Hashable {
    public var rung: String
    public var width: Int
    public var height: Int
    public var bitRate: Int
    public var transcoderNode: String?
    public var state: RenditionState

    init(_ record: RenditionRecord) {
        rung = record.rung
        width = record.width
        height = record.height
        bitRate = record.bitRate
        transcoderNode = record.transcoderNode
        state = record.state
    }
}
