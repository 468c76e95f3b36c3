import Cluster
import Foundation
import Media
import RTMP
import Relay
import Transcode

/// Settings read from `--config FILE` (JSON). Every field is optional; command-line flags
/// override the file, and the file overrides the built-in defaults. Durations are seconds.
///
/// ```json
/// { "rtmpPort": 1935, "httpPort": 8080, "maxMessageSize": 16777216, "maxChunkSize": 65536,
///   "subscriberQueueBytes": 4194304, "publisherIdleTakeoverSeconds": 2, "publisherGraceSeconds": 10 }
/// ```
struct NodeConfigurationFile: Codable, Sendable {
    var bindHost: String?
    var rtmpPort: Int?
    var httpPort: Int?
    var dataDir: String?
    var logLevel: String?
    var maxMessageSize: Int?
    var maxChunkSize: Int?
    var maxChunkStreams: Int?
    var subscriberQueueBytes: Int?
    var gopCacheMaxFrames: Int?
    var gopCacheMaxBytes: Int?
    var publisherIdleTakeoverSeconds: Double?
    var publisherGraceSeconds: Double?
    var handshakeTimeoutSeconds: Double?
    var viewerWakeIntervalMilliseconds: Int?
    var hlsSegmentSeconds: Double?
    var hlsPartSeconds: Double?
    var hlsWindowSegments: Int?
    /// Ladders by application: `{"abr": [{"name": "480p", "height": 480, "videoBitRate": 1400000}]}`.
    /// An application not listed passes streams through unchanged.
    var ladders: [String: [LadderRung]]?
    /// The cluster bus: `{"servers": ["nats://nats:4222"], "token": "…"}` (or `user` and
    /// `password`, or `credentialsFile`; `tls` with `caFile`, `certificateFile`, `keyFile`).
    var nats: NATSSettings?
    var nodeID: String?
    var advertiseHost: String?
    var coordinatorNode: String?
    /// Ingest in a cluster: publishing needs a key the coordinator issued (`?key=…`).
    var requireStreamKeys: Bool?
    /// Coordinator: the admin API's bearer token (prefer the ESTUARY_ADMIN_TOKEN variable).
    var adminToken: String?
    /// Coordinator: the SQLite file.
    var database: String?

    struct NATSSettings: Codable, Sendable {
        var servers: [String]?
        var token: String?
        var user: String?
        var password: String?
        var credentialsFile: String?
        var tls: TLSSettings?
    }

    struct TLSSettings: Codable, Sendable {
        var caFile: String?
        var certificateFile: String?
        var keyFile: String?
    }

    static func load(from path: String) throws -> NodeConfigurationFile {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        do {
            return try JSONDecoder().decode(NodeConfigurationFile.self, from: data)
        } catch {
            throw ConfigurationError.invalidFile(path, "\(error)")
        }
    }
}

enum ConfigurationError: Error, CustomStringConvertible {
    case invalidFile(String, String)
    case invalidValue(String)
    case needsBus(String)

    var description: String {
        switch self {
        case .invalidFile(let path, let why): "cannot read configuration \(path): \(why)"
        case .invalidValue(let why): "invalid configuration: \(why)"
        case .needsBus(let role): "role '\(role)' needs the cluster bus: pass --nats nats://host:4222 (or \"nats\" in the configuration file)"
        }
    }
}

/// The resolved settings of a node.
struct NodeConfiguration: Sendable {
    var bindHost = "0.0.0.0"
    var rtmp = RTMPServerConfiguration()
    var httpPort = 8080
    var dataDir = "data"
    var hub = HubConfiguration()
    var publisherGrace: Duration = .seconds(10)
    var hls = HLSConfiguration()
    /// Applications whose streams are transcoded, with their ladders: `abr` gets the
    /// default ladder, every other application (`live`) passes through.
    var ladders: [String: Ladder] = ["abr": .default]
    /// The cluster bus; nil for the embedded default.
    var nats: NATSBusConfiguration?
    /// This node's name on the bus and in the coordinator: by default the host name.
    var nodeID = NodeConfiguration.defaultNodeID
    /// How other nodes and players reach this node.
    var advertiseHost = ProcessInfo.processInfo.hostName
    /// Coordinator: the admin API's bearer token; nil refuses every admin request.
    var adminToken: String? = ProcessInfo.processInfo.environment["ESTUARY_ADMIN_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
    /// Ingest: refuse publishers without a valid stream key (cluster only: keys live in
    /// the coordinator).
    var requireStreamKeys = false
    /// The node id of the coordinator, whose actor the other roles call.
    var coordinatorNode = "coordinator"
    /// Coordinator: the SQLite file; nil means `<dataDir>/estuary.sqlite`.
    var database: String?
    var databasePath: String { database ?? "\(dataDir)/estuary.sqlite" }

    static var defaultNodeID: String {
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "node"
        let cleaned = String(host.prefix(64).map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") ? $0 : "-" })
        return cleaned.isEmpty ? "node" : cleaned
    }

    mutating func apply(_ file: NodeConfigurationFile) throws {
        if let value = file.bindHost { bindHost = value }
        if let value = file.rtmpPort { rtmp.port = value }
        if let value = file.httpPort { httpPort = value }
        if let value = file.dataDir { dataDir = value }
        if let value = file.maxMessageSize { rtmp.chunkLimits.maxMessageSize = try positive(value, "maxMessageSize") }
        if let value = file.maxChunkSize { rtmp.chunkLimits.maxChunkSize = try positive(value, "maxChunkSize") }
        if let value = file.maxChunkStreams { rtmp.chunkLimits.maxChunkStreams = try positive(value, "maxChunkStreams") }
        if let value = file.subscriberQueueBytes { hub.subscriberQueueBytes = try positive(value, "subscriberQueueBytes") }
        if let value = file.gopCacheMaxFrames { hub.gopCacheMaxFrames = try positive(value, "gopCacheMaxFrames") }
        if let value = file.gopCacheMaxBytes { hub.gopCacheMaxBytes = try positive(value, "gopCacheMaxBytes") }
        if let value = file.publisherIdleTakeoverSeconds { hub.publisherIdleTakeover = try seconds(value, "publisherIdleTakeoverSeconds") }
        if let value = file.publisherGraceSeconds { publisherGrace = try seconds(value, "publisherGraceSeconds") }
        if let value = file.handshakeTimeoutSeconds { rtmp.handshakeTimeout = try seconds(value, "handshakeTimeoutSeconds") }
        if let value = file.viewerWakeIntervalMilliseconds {
            guard (0...1000).contains(value) else { throw ConfigurationError.invalidValue("viewerWakeIntervalMilliseconds must be within 0…1000, got \(value)") }
            hub.wakeInterval = .milliseconds(value)
        }
        if let value = file.hlsSegmentSeconds { hls.targetSegmentDuration = try seconds(value, "hlsSegmentSeconds") }
        if let value = file.hlsPartSeconds {
            guard (0.1...2).contains(value) else { throw ConfigurationError.invalidValue("hlsPartSeconds must be within 0.1…2, got \(value)") }
            hls.partTargetDuration = try seconds(value, "hlsPartSeconds")
        }
        if let value = file.hlsWindowSegments { hls.windowSegments = try positive(value, "hlsWindowSegments") }
        if let value = file.ladders {
            for app in value.keys where !StreamPath.isValidComponent(app) {
                throw ConfigurationError.invalidValue("ladders: invalid application name '\(app)'")
            }
            ladders = value.mapValues { Ladder(rungs: $0) }
        }
        if let value = file.nats {
            var bus = NATSBusConfiguration(servers: value.servers ?? [])
            bus.token = value.token
            bus.user = value.user
            bus.password = value.password
            bus.credentialsFile = value.credentialsFile
            if let tls = value.tls {
                bus.tls = .init(caFile: tls.caFile, certificateFile: tls.certificateFile, keyFile: tls.keyFile)
            }
            nats = bus
        }
        if let value = file.nodeID { nodeID = value }
        if let value = file.advertiseHost { advertiseHost = value }
        if let value = file.coordinatorNode { coordinatorNode = value }
        if let value = file.requireStreamKeys { requireStreamKeys = value }
        if let value = file.adminToken { adminToken = value }
        if let value = file.database { database = value }
    }

    /// Checks what a role needs; throws the reason it cannot start.
    func validate(role: NodeRole) throws {
        switch role {
        case .all:
            break
        case .ingest, .relay, .transcode, .coordinator:
            guard let nats, !nats.servers.isEmpty else { throw ConfigurationError.needsBus(role.rawValue) }
        }
        for server in nats?.servers ?? [] where !(server.hasPrefix("nats://") || server.hasPrefix("tls://")) {
            throw ConfigurationError.invalidValue("NATS server '\(server)' must start with nats:// or tls://")
        }
        // The id is a NATS subject token of every actor of the node (`actor.<nodeID>.…`).
        guard (try? NodeActorID(nodeID: nodeID, name: CoordinatorAddress.actorName)) != nil else {
            throw ConfigurationError.invalidValue("node id '\(nodeID)' must be 1–64 ASCII letters, digits, '-' or '_'")
        }
    }

    private func positive(_ value: Int, _ name: String) throws -> Int {
        guard value > 0 else { throw ConfigurationError.invalidValue("\(name) must be positive, got \(value)") }
        return value
    }

    private func seconds(_ value: Double, _ name: String) throws -> Duration {
        guard value >= 0, value.isFinite else { throw ConfigurationError.invalidValue("\(name) must be ≥ 0, got \(value)") }
        return .milliseconds(Int64(value * 1000))
    }
}
