import AdminAPI
import Cluster
import Foundation
import Media

// The coordinator's read model as the admin API's wire types (generated from
// docs/openapi.yaml). A field the document lacks cannot be sent, and one it requires
// cannot be forgotten: the compiler holds the two together.

extension Components.Schemas.Node {
    init(_ summary: NodeSummary) {
        self.init(
            id: summary.id,
            role: RolePayload(rawValue: summary.role.rawValue) ?? .all,
            advertiseHost: summary.advertiseHost,
            state: StatePayload(rawValue: summary.state) ?? .dead,
            load: summary.load,
            draining: summary.draining,
            transcodeJobs: summary.transcodeJobs,
            registeredAt: summary.registeredAt,
            lastHeartbeatAt: summary.lastHeartbeatAt
        )
    }
}

extension Components.Schemas.StreamFacts {
    init(_ facts: StreamFacts) {
        self.init(
            container: facts.container, videoCodec: facts.videoCodec, videoProfile: facts.videoProfile,
            width: facts.width, height: facts.height, frameRate: facts.frameRate, videoBitRate: facts.videoBitRate,
            audioCodec: facts.audioCodec, audioBitRate: facts.audioBitRate,
            audioSampleRate: facts.audioSampleRate, audioChannels: facts.audioChannels, tracks: facts.tracks
        )
    }
}

extension Components.Schemas.Rendition {
    init(_ summary: RenditionSummary) {
        self.init(
            rung: summary.rung, width: summary.width, height: summary.height, bitRate: summary.bitRate,
            transcoderNode: summary.transcoderNode,
            state: StatePayload(rawValue: summary.state.rawValue) ?? .unplaced
        )
    }
}

extension Components.Schemas.Stream {
    init(_ summary: StreamSummary) {
        self.init(
            id: summary.id, app: summary.app, name: summary.name,
            state: StatePayload(rawValue: summary.state) ?? .live,
            ingestNode: summary.ingestNode,
            facts: .init(summary.facts),
            renditions: summary.renditions.map(Components.Schemas.Rendition.init),
            viewers: .init(additionalProperties: summary.viewers),
            totalViewers: summary.totalViewers,
            startedAt: summary.startedAt,
            uptimeSeconds: summary.uptimeSeconds,
            bytes: summary.bytes
        )
    }
}

extension Components.Schemas.NodeStream {
    init(_ report: StreamReport) {
        self.init(
            app: report.app, name: report.name,
            publishing: report.publishing.map(Components.Schemas.StreamFacts.init),
            bytes: report.bytes, viewers: report.viewers, rungs: report.rungs, upstream: report.upstream
        )
    }
}

extension Components.Schemas.Session {
    /// A session as a node reports it. Its kind and protocol are the document's enums; a
    /// value outside them (a newer node's) is left out rather than sent as something else.
    public init?(_ report: SessionReport) {
        guard let kind = KindPayload(rawValue: report.kind), let proto = _ProtocolPayload(rawValue: report.protocol) else { return nil }
        self.init(
            id: report.id, kind: kind, path: report.path, _protocol: proto,
            remoteAddress: report.remoteAddress, query: report.query,
            startedAt: report.startedAt, durationSeconds: report.durationSeconds,
            bytesIn: report.bytesIn, bytesOut: report.bytesOut, node: report.node,
            link: report.link.map {
                .init(rttSeconds: $0.rttSeconds, bitsPerSecond: $0.bitsPerSecond, packetsLost: $0.packetsLost,
                      packetsRetransmitted: $0.packetsRetransmitted, packetsDropped: $0.packetsDropped)
            }
        )
    }
}

extension Components.Schemas.StreamKey {
    init(_ summary: StreamKeySummary) {
        self.init(id: summary.id, app: summary.app, name: summary.name, createdAt: summary.createdAt, revokedAt: summary.revokedAt)
    }
}

extension Components.Schemas.CreatedStreamKey {
    init(_ created: CreatedStreamKey) {
        self.init(id: created.id, app: created.app, name: created.name, createdAt: created.createdAt, key: created.key)
    }
}
