import Cluster

/// The admin API's request and response envelopes (the summaries they carry have files of
/// their own).

/// `GET /api/v1/nodes`.
public struct NodeList: Codable, Sendable {
    public var nodes: [NodeSummary]
}

/// `GET /api/v1/nodes/{id}/streams`.
public struct NodeStreamList: Codable, Sendable {
    public var node: String
    public var streams: [StreamReport]
}

/// `GET /api/v1/sessions` on the coordinator: every node's sessions, and the nodes that did
/// not answer (their sessions are missing from the list).
public struct ClusterSessionList: Codable, Sendable {
    public var sessions: [SessionReport]
    public var unreachable: [String]
}

/// `GET /api/v1/streams`.
public struct StreamList: Codable, Sendable {
    public var streams: [StreamSummary]
}

/// `GET /api/v1/streams/{app}/{name}`: the stream, and its sessions on every node that
/// serves clients (its publisher, and its viewers over every protocol, rungs included),
/// asked live as `GET /api/v1/sessions` asks.
public struct StreamDetail: Codable, Sendable {
    public var stream: StreamSummary
    public var sessions: [SessionReport]
    /// Nodes that did not answer for their sessions.
    public var unreachable: [String]
}

/// `GET /api/v1/keys`.
public struct StreamKeyList: Codable, Sendable {
    public var keys: [StreamKeySummary]
}

/// The body of `POST /api/v1/keys`.
public struct CreateStreamKeyRequest: Codable, Sendable {
    public var app: String
    public var name: String

    public init(app: String, name: String) {
        self.app = app
        self.name = name
    }
}

/// The answer of `POST /api/v1/streams/{app}/{name}/kick`.
public struct KickAccepted: Codable, Sendable {
    public var app: String
    public var name: String
}
