import Cluster
import Edge
import Foundation
import Hooks
import Tokens
import Media
import RTMP
import Relay
import Transcode

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
    /// The admin plane's address and port: loopback unless the operator opens it.
    var adminHost = "127.0.0.1"
    var adminPort = 8090
    /// RTMPS and HTTPS listeners (`tls` needed), off when nil.
    var rtmpsPort: Int?
    var httpsPort: Int?
    /// The SRT listener (UDP; MPEG-TS publishers), off when nil, and its latency.
    var srtPort: Int?
    var srtLatencyMilliseconds = 120
    var srtMaxPublishers = 64
    var srtMaxPlayers = 256
    var srtMaxCallersPerAddress = 16
    /// How long an SRT handshake may wait for a key or JWT check; nil: a quarter of the
    /// latency, at most 100 ms (`SRTListener.Configuration.handshakeWait`).
    var srtHandshakeWaitMilliseconds: Int?
    var srtPassphrase: String?
    /// PEM files of the TLS certificate chain and key.
    var tlsCertificateFile: String?
    var tlsKeyFile: String?
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
    var adminToken: String?
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
    /// How long a negotiated play of a new stream waits for its video codec (`Playback`):
    /// 2 s, or a quarter of the admission timeout if that is less, so that the hooks and the
    /// wait together stay within it.
    var playCodecWait: Duration { min(.seconds(2), admissionTimeout / 4) }
    /// Webhooks by application (`hooks`).
    var hooks = HookConfiguration()
    /// Signed URLs by application (`tokens`), JWKS files read.
    var tokens: [String: ApplicationTokens] = [:]
    /// Drain: where publishers are asked to reconnect (`DrainTarget`), or nil.
    var drainReconnectTo: String?

    static var defaultNodeID: String {
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "node"
        let cleaned = String(host.prefix(64).map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") ? $0 : "-" })
        return cleaned.isEmpty ? "node" : cleaned
    }

    mutating func apply(_ file: NodeConfigurationFile) throws {
        if let value = file.bindHost { bindHost = try Self.bindAddress(value, key: "bindHost") }
        if let value = file.rtmpPort { rtmp.port = value }
        if let value = file.httpPort { httpPort = value }
        if let value = file.adminBind { adminHost = try Self.bindAddress(value, key: "adminBind") }
        if let value = file.adminPort { adminPort = value }
        if let value = file.rtmpsPort { rtmpsPort = value }
        if let value = file.httpsPort { httpsPort = value }
        if let value = file.srtPort { srtPort = value }
        if let value = file.srtPassphrase {
            guard (10...79).contains(value.utf8.count) else {
                throw ConfigurationError.invalidValue("srtPassphrase must be 10 to 79 characters, got \(value.utf8.count)")
            }
            srtPassphrase = value
        }
        if let value = file.srtMaxPublishers { srtMaxPublishers = try positive(value, "srtMaxPublishers") }
        if let value = file.srtMaxPlayers { srtMaxPlayers = try positive(value, "srtMaxPlayers") }
        if let value = file.srtMaxCallersPerAddress { srtMaxCallersPerAddress = try positive(value, "srtMaxCallersPerAddress") }
        if let value = file.srtHandshakeWaitMilliseconds {
            guard (0...1000).contains(value) else {
                throw ConfigurationError.invalidValue("srtHandshakeWaitMilliseconds must be within 0…1000, got \(value)")
            }
            srtHandshakeWaitMilliseconds = value
        }
        if let value = file.srtLatencyMilliseconds {
            guard (20...8000).contains(value) else {
                throw ConfigurationError.invalidValue("srtLatencyMilliseconds must be within 20…8000, got \(value)")
            }
            srtLatencyMilliseconds = value
        }
        if let tls = file.tls {
            guard let certificate = tls.certificateFile, let key = tls.keyFile else {
                throw ConfigurationError.invalidValue("tls: needs both certificateFile and keyFile")
            }
            tlsCertificateFile = certificate
            tlsKeyFile = key
        }
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
        if let value = file.negotiateVideoCodecs {
            rtmp.negotiateVideoCodecs = value
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
        if let value = file.hlsMaxBytes {
            guard value >= 1 << 20 else { throw ConfigurationError.invalidValue("hlsMaxBytes must be 1 MiB (1048576) or more, got \(value)") }
            hls.maxNodeBytes = value
        }
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
        if let value = file.upstreams?.filter({ !$0.isEmpty }) {
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
        // A token alone (`ESTUARY_NATS_TOKEN` on a node without servers) joins no bus.
        if let value = file.nats, let servers = value.servers, !servers.isEmpty {
            var bus = NATSBusConfiguration(servers: servers)
            // A token in a server URL (`nats://TOKEN@host`) wins over one given apart.
            bus.token = servers.contains(where: { $0.contains("@") }) ? nil : value.token.flatMap { $0.isEmpty ? nil : $0 }
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
        if let value = file.adminToken, !value.isEmpty { adminToken = value }
        if let value = file.database { database = value }
        if let value = file.hooks {
            hooks = try Self.hooks(value)
        }
        if let value = file.tokens {
            tokens = try Self.tokens(value)
        }
        if let value = file.admissionTimeoutSeconds {
            guard value <= 60 else { throw ConfigurationError.invalidValue("admissionTimeoutSeconds must be at most 60, got \(value)") }
            admissionTimeout = try timeout(value, "admissionTimeoutSeconds")
        }
        if let value = file.drainGraceSeconds {
            guard value <= NodeAdminAPI.longestGrace else { throw ConfigurationError.invalidValue("drainGraceSeconds must be at most \(Int(NodeAdminAPI.longestGrace)), got \(value)") }
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
        try validatePorts()
        if let late = hooksOutlastingAdmission().first {
            throw ConfigurationError.invalidValue("\(late): its attempts (timeoutSeconds × (retries + 1), with pauses) outlast admissionTimeoutSeconds (\(admissionTimeout)); shorten them or raise the admission timeout")
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
