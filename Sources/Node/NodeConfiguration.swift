import Cluster
import Edge
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
    /// RTMP: `connect` within this after the handshake (10).
    var connectTimeoutSeconds: Double?
    /// RTMP: `publish` or `play` within this after `connect` (30).
    var sessionStartTimeoutSeconds: Double?
    /// RTMP: a publisher that sends no media for this long is closed (30).
    var publisherIdleTimeoutSeconds: Double?
    /// RTMP and HTTP: a connection whose socket takes nothing for this long is closed (30).
    var writeStallTimeoutSeconds: Double?
    /// HTTP: the first request head must be complete within this (10).
    var httpHeaderTimeoutSeconds: Double?
    /// HTTP: a kept-alive connection with no request for this long is closed (60).
    var httpIdleTimeoutSeconds: Double?
    /// RTMP: the largest command or control message (65536).
    var maxCommandMessageSize: Int?
    /// RTMP: the largest data message buffered at all (1048576).
    var maxDataMessageSize: Int?
    /// RTMP: metadata over this many bytes, received or re-encoded, is dropped (65536).
    var maxMetadataBytes: Int?
    /// RTMP: metadata with more AMF0 values than this is dropped (1024).
    var maxMetadataValues: Int?
    /// RTMP: bytes in reassembly over every connection of the node (268435456).
    var maxReassemblyBytes: Int?
    /// RTMP: bytes in reassembly on one connection (see `ChunkLimits.maxBufferedBytes`).
    var maxReassemblyBytesPerConnection: Int?
    /// RTMP: an unfinished message that receives no byte for this long closes its connection (5).
    var messageStallTimeoutSeconds: Double?
    /// RTMP and HTTP: SO_SNDBUF of each connection (262144; 0 leaves the kernel's autotuning).
    var socketSendBufferBytes: Int?
    /// RTMP and HTTP, each listener: open connections (10000) and per client address (1000).
    var maxConnections: Int?
    var maxConnectionsPerAddress: Int?
    /// The per-address limit applies to loopback clients too (false: a local proxy is exempt).
    var limitLoopbackConnections: Bool?
    var viewerWakeIntervalMilliseconds: Int?
    /// Viewers on the node up to which writes are not merged (20), and from which they are
    /// merged over the whole `viewerWakeIntervalMilliseconds` (300); linear in between.
    var mergeWritesAboveViewers: Int?
    var mergeWritesFullAtViewers: Int?
    var hlsSegmentSeconds: Double?
    var hlsPartSeconds: Double?
    var hlsWindowSegments: Int?
    /// Streams transcoded at once (4); publishes into a ladder's application beyond it are refused.
    var maxTranscodes: Int?
    /// Streams published at once (1000); publishes of new streams beyond it are refused.
    var maxStreams: Int?
    /// Edge: the servers to pull from, in order of preference (`["http://origin-1:8080"]`).
    var upstreams: [String]?
    /// Push-forward targets by application: `{"live": ["rtmp://cdn.example/live"]}`.
    var forwards: [String: [String]]?
    /// Static pulls by application and stream name: `{"live": {"cam": "rtmp://origin/live/cam"}}`.
    var pulls: [String: [String: String]]?
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
    /// Drain (SIGTERM, `POST /api/v1/node/drain`): how long the node waits for its sessions
    /// to leave before it stops (8; 0 makes SIGTERM stop at once).
    var drainGraceSeconds: Double?
    /// Every protocol: a publish or play whose admission decision (keys, hooks) has not come
    /// within this is refused as unavailable (5; up to 60).
    var admissionTimeoutSeconds: Double?
    /// Drain: where Enhanced RTMP v2 publishers are asked to reconnect (`rtmp://other:1935`;
    /// the stream's application is appended). Unset, they reconnect to the URL they used.
    var drainReconnectTo: String?

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
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigurationError.invalidFile(path, "cannot read the file")
        }
        let json: Any
        do {
            json = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw ConfigurationError.invalidFile(path, "not valid JSON")
        }
        guard let object = json as? [String: Any] else { throw ConfigurationError.invalidFile(path, "expected a JSON object at the top") }
        // A misspelt key would otherwise be ignored in silence, and its setting left at the default.
        try Self.checkKeys(object, known: Self.keys(of: NodeConfigurationFile()), path: path, prefix: "")
        if let nats = object["nats"] as? [String: Any] {
            try Self.checkKeys(nats, known: Self.keys(of: NATSSettings()), path: path, prefix: "nats.")
            if let tls = nats["tls"] as? [String: Any] {
                try Self.checkKeys(tls, known: Self.keys(of: TLSSettings()), path: path, prefix: "nats.tls.")
            }
        }
        do {
            return try JSONDecoder().decode(NodeConfigurationFile.self, from: data)
        } catch let error as DecodingError {
            throw ConfigurationError.invalidFile(path, Self.describe(error, in: object))
        } catch {
            throw ConfigurationError.invalidFile(path, "\(error)")
        }
    }

    /// The property names of a settings struct (they are its JSON keys).
    private static func keys(of value: Any) -> Set<String> {
        Set(Mirror(reflecting: value).children.compactMap(\.label))
    }

    private static func checkKeys(_ object: [String: Any], known: Set<String>, path: String, prefix: String) throws {
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw ConfigurationError.invalidFile(path, "unknown key '\(prefix)\(unknown)'")
        }
    }

    /// One line: the key, what was expected, what the file has.
    private static func describe(_ error: DecodingError, in object: [String: Any]) -> String {
        func keyPath(_ context: DecodingError.Context) -> String {
            context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        func found(_ context: DecodingError.Context) -> String {
            var value: Any? = object
            for key in context.codingPath {
                if let index = key.intValue, let array = value as? [Any] {
                    value = index < array.count ? array[index] : nil
                } else {
                    value = (value as? [String: Any])?[key.stringValue]
                }
            }
            switch value {
            case is String: return "a string"
            case let number as NSNumber: return "the value \(number)"
            case is [Any]: return "an array"
            case is [String: Any]: return "an object"
            case is NSNull: return "null"
            default: return "nothing"
            }
        }
        switch error {
        case .typeMismatch(let type, let context):
            return "'\(keyPath(context))': expected \(Self.name(of: type)), got \(found(context))"
        case .valueNotFound(let type, let context):
            return "'\(keyPath(context))': expected \(Self.name(of: type)), got null"
        case .keyNotFound(let key, let context):
            let parent = keyPath(context)
            return "'\(parent.isEmpty ? key.stringValue : parent + "." + key.stringValue)': required key missing"
        case .dataCorrupted(let context):
            return "'\(keyPath(context))': \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }

    private static func name(of type: Any.Type) -> String {
        switch type {
        case is Int.Type: "a whole number"
        case is Double.Type: "a number"
        case is Bool.Type: "true or false"
        case is String.Type: "a string"
        default: "\(type)"
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
    var rtmp: RTMPServerConfiguration = {
        var rtmp = RTMPServerConfiguration()
        rtmp.chunkLimits.nodeBudget = ReassemblyBudget(limit: NodeConfiguration.defaultReassemblyBytes)
        return rtmp
    }()
    /// Bytes in RTMP reassembly over all connections: 16 maximum-size messages at once.
    static let defaultReassemblyBytes = 256 * 1024 * 1024
    var httpPort = 8080
    var httpConnectionLimits = ConnectionLimits()
    var httpGuard = HTTPConnectionGuard.Settings()
    /// Hummingbird's keep-alive idle timeout (its default is none), which also ends a
    /// connection that trickles a request head for ever.
    var httpIdleTimeout: Duration = .seconds(60)
    var dataDir = "data"
    var hub: HubConfiguration = {
        var hub = HubConfiguration()
        hub.wakeLoad = WakeLoad()
        return hub
    }()
    var publisherGrace: Duration = .seconds(10)
    var hls = HLSConfiguration()
    /// Applications whose streams are transcoded, with their ladders: `abr` gets the
    /// default ladder, every other application (`live`) passes through.
    var ladders: [String: Ladder] = ["abr": .default]
    /// Streams accepted at once into applications with a ladder (each starts an x264
    /// ladder); over it, publishes are refused with `NetStream.Publish.Denied`.
    var maxTranscodes: Int? = 4
    /// Streams a node carries at once (each a hub with its GOP cache, and HLS renditions).
    var maxStreams: Int? = 1000
    /// Edge: the servers to pull from, in order of preference.
    var upstreams: [Upstream] = []
    /// Streams published to these applications are pushed on to these targets.
    var forwards: [String: [ForwardTarget]] = [:]
    /// Streams pulled from other servers and published here (`StaticPull`).
    var pulls: [StreamPath: String] = [:]
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
    /// Drain: the longest wait for sessions to leave. Under Docker's 10 s stop timeout, so
    /// that `docker stop` drains rather than kills.
    var drainGrace: Duration = .seconds(8)
    /// A publish or play without an admission decision within this is refused.
    var admissionTimeout: Duration = .seconds(5)
    /// Drain: where publishers are asked to reconnect (`DrainTarget`), or nil.
    var drainReconnectTo: String?

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
        if let value = file.connectTimeoutSeconds { rtmp.connectTimeout = try timeout(value, "connectTimeoutSeconds") }
        if let value = file.sessionStartTimeoutSeconds { rtmp.sessionStartTimeout = try timeout(value, "sessionStartTimeoutSeconds") }
        if let value = file.publisherIdleTimeoutSeconds { rtmp.publisherIdleTimeout = try timeout(value, "publisherIdleTimeoutSeconds") }
        if let value = file.writeStallTimeoutSeconds {
            rtmp.writeStallTimeout = try timeout(value, "writeStallTimeoutSeconds")
            httpGuard.writeStallTimeout = rtmp.writeStallTimeout
        }
        if let value = file.httpHeaderTimeoutSeconds { httpGuard.headerTimeout = try timeout(value, "httpHeaderTimeoutSeconds") }
        if let value = file.httpIdleTimeoutSeconds { httpIdleTimeout = try timeout(value, "httpIdleTimeoutSeconds") }
        if let value = file.maxCommandMessageSize { rtmp.chunkLimits.maxCommandMessageSize = try positive(value, "maxCommandMessageSize") }
        if let value = file.maxDataMessageSize { rtmp.chunkLimits.maxDataMessageSize = try positive(value, "maxDataMessageSize") }
        if let value = file.maxMetadataBytes { rtmp.maxMetadataBytes = try positive(value, "maxMetadataBytes") }
        if let value = file.maxMetadataValues { rtmp.maxMetadataValues = try positive(value, "maxMetadataValues") }
        if let value = file.maxReassemblyBytes { rtmp.chunkLimits.nodeBudget = ReassemblyBudget(limit: try positive(value, "maxReassemblyBytes")) }
        if let value = file.maxReassemblyBytesPerConnection {
            rtmp.chunkLimits.maxBufferedBytes = try positive(value, "maxReassemblyBytesPerConnection")
        }
        if let value = file.messageStallTimeoutSeconds { rtmp.messageStallTimeout = try timeout(value, "messageStallTimeoutSeconds") }
        if let value = file.socketSendBufferBytes {
            guard value >= 0 else { throw ConfigurationError.invalidValue("socketSendBufferBytes must be ≥ 0, got \(value)") }
            rtmp.socketSendBufferBytes = value == 0 ? nil : value
            httpGuard.socketSendBufferBytes = rtmp.socketSendBufferBytes
        }
        if let value = file.maxConnections {
            rtmp.connectionLimits.maxConnections = try positive(value, "maxConnections")
            httpConnectionLimits.maxConnections = value
        }
        if let value = file.limitLoopbackConnections {
            rtmp.connectionLimits.limitLoopback = value
            httpConnectionLimits.limitLoopback = value
        }
        if let value = file.maxConnectionsPerAddress {
            rtmp.connectionLimits.maxConnectionsPerAddress = try positive(value, "maxConnectionsPerAddress")
            httpConnectionLimits.maxConnectionsPerAddress = value
        }
        if let value = file.viewerWakeIntervalMilliseconds {
            guard (0...1000).contains(value) else { throw ConfigurationError.invalidValue("viewerWakeIntervalMilliseconds must be within 0…1000, got \(value)") }
            hub.wakeInterval = .milliseconds(value)
        }
        if file.mergeWritesAboveViewers != nil || file.mergeWritesFullAtViewers != nil {
            let low = file.mergeWritesAboveViewers ?? hub.wakeLoad?.lowViewers ?? 20
            let full = file.mergeWritesFullAtViewers ?? hub.wakeLoad?.fullViewers ?? 300
            guard low >= 0, full > low else {
                throw ConfigurationError.invalidValue("mergeWritesFullAtViewers (\(full)) must be above mergeWritesAboveViewers (\(low)), which must be ≥ 0")
            }
            hub.wakeLoad = WakeLoad(lowViewers: low, fullViewers: full)
        }
        if let value = file.hlsSegmentSeconds { hls.targetSegmentDuration = try seconds(value, "hlsSegmentSeconds") }
        if let value = file.hlsPartSeconds {
            guard (0.1...2).contains(value) else { throw ConfigurationError.invalidValue("hlsPartSeconds must be within 0.1…2, got \(value)") }
            hls.partTargetDuration = try seconds(value, "hlsPartSeconds")
        }
        if let value = file.hlsWindowSegments { hls.windowSegments = try positive(value, "hlsWindowSegments") }
        if let value = file.maxTranscodes { maxTranscodes = try positive(value, "maxTranscodes") }
        if let value = file.maxStreams { maxStreams = try positive(value, "maxStreams") }
        if let value = file.forwards {
            var parsed: [String: [ForwardTarget]] = [:]
            for (app, urls) in value {
                guard StreamPath.isValidComponent(app) else {
                    throw ConfigurationError.invalidValue("forwards: invalid application name '\(app)'")
                }
                parsed[app] = try urls.map { url throws(ConfigurationError) in
                    do {
                        return try ForwardTarget(url)
                    } catch {
                        throw ConfigurationError.invalidValue("forwards: \(error)")
                    }
                }
            }
            forwards = parsed
        }
        if let value = file.pulls {
            var parsed: [StreamPath: String] = [:]
            for (app, streams) in value {
                for (name, source) in streams {
                    guard let path = try? StreamPath(app: app, name: name) else {
                        throw ConfigurationError.invalidValue("pulls: invalid stream name '\(app)/\(name)'")
                    }
                    guard Self.isPullSource(source) else {
                        throw ConfigurationError.invalidValue("pulls.\(app).\(name): '\(source.prefix(80))' is not rtmp://host[:port]/app/name or http(s)://host[:port]/….flv")
                    }
                    parsed[path] = source
                }
            }
            pulls = parsed
        }
        if let value = file.upstreams {
            upstreams = try value.map { string throws(ConfigurationError) in
                do {
                    return try Upstream(string)
                } catch {
                    throw ConfigurationError.invalidValue("upstreams: \(error)")
                }
            }
        }
        if let value = file.ladders {
            for app in value.keys where !StreamPath.isValidComponent(app) {
                throw ConfigurationError.invalidValue("ladders: invalid application name '\(app)'")
            }
            // A rung's name is the last element of its URL (`app/name/480p`) and its bus
            // subject's token, where `src` is the source's.
            for (app, rungs) in value {
                for rung in rungs where !StreamPath.isValidComponent(rung.name) || rung.name == "src" {
                    throw ConfigurationError.invalidValue("ladders.\(app): invalid rung name '\(rung.name)' (letters, digits, _ - . and not 'src')")
                }
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
        if let value = file.admissionTimeoutSeconds {
            guard value <= 60 else { throw ConfigurationError.invalidValue("admissionTimeoutSeconds must be at most 60, got \(value)") }
            admissionTimeout = try timeout(value, "admissionTimeoutSeconds")
        }
        if let value = file.drainGraceSeconds {
            guard value <= DrainRoutes.longestGrace else { throw ConfigurationError.invalidValue("drainGraceSeconds must be at most \(Int(DrainRoutes.longestGrace)), got \(value)") }
            drainGrace = try seconds(value, "drainGraceSeconds")
        }
        if let value = file.drainReconnectTo { drainReconnectTo = try Self.drainTarget(value) }
    }

    /// A static pull's source: an RTMP stream URL, or an HTTP(S) URL of an FLV stream, at
    /// most 2048 bytes.
    static func isPullSource(_ source: String) -> Bool {
        guard source.utf8.count <= 2048, !source.contains(where: \.isWhitespace) else { return false }
        if source.lowercased().hasPrefix("rtmp://") { return (try? RTMPClientURL(source)) != nil }
        guard let url = URLComponents(string: source), let scheme = url.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty, url.path.count > 1
        else { return false }
        return true
    }

    static func drainTarget(_ url: String) throws(ConfigurationError) -> String {
        do {
            return try DrainTarget.validated(url)
        } catch {
            throw ConfigurationError.invalidValue("drainReconnectTo: \(error)")
        }
    }

    /// Checks what a role needs; throws the reason it cannot start.
    func validate(role: NodeRole) throws {
        switch role {
        case .all:
            break
        case .ingest, .relay, .transcode, .coordinator:
            guard let nats, !nats.servers.isEmpty else { throw ConfigurationError.needsBus(role.rawValue) }
        case .edge:
            guard !upstreams.isEmpty else {
                throw ConfigurationError.invalidValue("an edge needs at least one upstream (--upstream http://origin:8080)")
            }
            // estuary:// pulls over the cluster's bus.
            if upstreams.contains(where: { $0.scheme == .estuary }), nats == nil {
                throw ConfigurationError.invalidValue("an estuary:// upstream is the cluster's bus: add --nats nats://host:4222")
            }
        }
        if !pulls.isEmpty, ![.all, .ingest].contains(role) {
            throw ConfigurationError.invalidValue("pulls publish into the node: they need --role all or ingest")
        }
        if role != .edge, !upstreams.isEmpty {
            throw ConfigurationError.invalidValue("upstreams are for --role edge")
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

    /// A timeout: positive seconds (zero would close every connection at once).
    private func timeout(_ value: Double, _ name: String) throws -> Duration {
        guard value > 0, value.isFinite else { throw ConfigurationError.invalidValue("\(name) must be > 0, got \(value)") }
        return .milliseconds(Int64(value * 1000))
    }

    private func seconds(_ value: Double, _ name: String) throws -> Duration {
        guard value >= 0, value.isFinite else { throw ConfigurationError.invalidValue("\(name) must be ≥ 0, got \(value)") }
        return .milliseconds(Int64(value * 1000))
    }
}
