import Cluster
import Edge
import Foundation
import Media
import RTMP
import Relay
import Transcode

/// The settings a configuration file may hold (`--config FILE`, YAML or JSON), which are
/// also what `ESTUARY_…` variables and flags override, key by key (`ConfigurationSources`).
/// Every field is optional; the built-in defaults are `NodeConfiguration`'s. Durations are
/// seconds.
///
/// ```yaml
/// rtmpPort: 1935
/// subscriberQueueBytes: 4194304
/// ladders:
///   abr: [{name: 480p, height: 480, videoBitRate: 1400000}]
/// ```
struct NodeConfigurationFile: Codable, Sendable {
    var bindHost: String?
    var rtmpPort: Int?
    var httpPort: Int?
    /// The admin plane: the API, `/metrics` and the session endpoints, apart from the
    /// playback port (127.0.0.1 and 8090 by default; 8091 for an ingest, 8092 a transcoder).
    var adminBind: String?
    var adminPort: Int?
    /// RTMPS (RTMP over TLS) and HTTPS (HTTP-FLV, HLS, the API) listeners; both need `tls`.
    var rtmpsPort: Int?
    var httpsPort: Int?
    /// The SRT listener's UDP port (MPEG-TS publishers; off when absent) and SRT latency.
    var srtPort: Int?
    var srtLatencyMilliseconds: Int?
    /// SRT publishers and SRT players at once, each its own cap (64, 256); more are rejected
    /// in the handshake (`SRT_REJX_OVERLOAD`, 1402).
    var srtMaxPublishers: Int?
    var srtMaxPlayers: Int?
    /// SRT publishers, and separately players, at once from one address (16 each; loopback
    /// exempt unless `limitLoopbackConnections`).
    var srtMaxCallersPerAddress: Int?
    /// How long an SRT handshake may wait for a key or JWT check (0–1000 ms; 0: never; by
    /// default a quarter of the latency, at most 100 ms).
    var srtHandshakeWaitMilliseconds: Int?
    /// SRT's AES passphrase (10–79 characters): callers must give the same.
    var srtPassphrase: String?
    /// The certificate chain and key of RTMPS and HTTPS, PEM files: `{"certificateFile": "…", "keyFile": "…"}`.
    /// Read again on SIGHUP and when either file changes.
    var tls: ServerTLSSettings?

    struct ServerTLSSettings: Codable, Sendable {
        var certificateFile: String?
        var keyFile: String?
    }
    var dataDir: String?
    var logLevel: String?
    /// `text` (the default) or `json`.
    var logFormat: String?
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
    /// RTMP players get the codecs they announced (`fourCcList`): an HEVC, AV1 or VP9 stream's
    /// H.264 rung, or `NetStream.Play.Failed`, for one that did not announce it (true).
    var negotiateVideoCodecs: Bool?
    var viewerWakeIntervalMilliseconds: Int?
    /// Viewers on the node up to which writes are not merged (20), and from which they are
    /// merged over the whole `viewerWakeIntervalMilliseconds` (300); linear in between.
    var mergeWritesAboveViewers: Int?
    var mergeWritesFullAtViewers: Int?
    var hlsSegmentSeconds: Double?
    var hlsPartSeconds: Double?
    var hlsWindowSegments: Int?
    /// Bytes of HLS media the node keeps over every rendition (the smaller of 2 GiB and a
    /// quarter of the machine's memory, at least 256 MiB; 1 MiB or more).
    var hlsMaxBytes: Int?
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
    /// Webhooks by application (`*` for every application without its own):
    /// `{"live": {"onPublish": {"url": "http://backend/publish", "timeoutSeconds": 2, "retries": 1},
    /// "onUnpublish": {…}, "onPlay": {…}, "onStop": {…}, "failOpen": false}}`.
    var hooks: [String: HookSettings]?
    /// Signed play and publish URLs by application (`*` for every application without its own):
    /// `{"live": {"actions": ["play"], "hmacSecret": "…", "jwtSecret": "…", "jwksFile": "jwks.json", "onExpiry": "kick"}}`.
    var tokens: [String: TokenSettings]?

    struct TokenSettings: Codable, Sendable {
        /// `play`, `publish` (both by default).
        var actions: [String]?
        var hmacSecret: String?
        var jwtSecret: String?
        var jwksFile: String?
        /// An identity provider's JWKS (`https://idp.example/.well-known/jwks.json`), fetched
        /// at start, every 5 min, and when a token names a key it lacks.
        var jwksURL: String?
        /// `kick` (the default) or `keep` a live session whose token expires.
        var onExpiry: String?
    }

    struct HookSettings: Codable, Sendable {
        var onPublish: HookEndpointSettings?
        var onUnpublish: HookEndpointSettings?
        var onPlay: HookEndpointSettings?
        var onStop: HookEndpointSettings?
        /// A deciding hook that cannot be reached admits (true) or refuses (false, the default).
        var failOpen: Bool?
    }

    struct HookEndpointSettings: Codable, Sendable {
        var url: String?
        /// One attempt's limit (2; 0.1…30).
        var timeoutSeconds: Double?
        /// Attempts after a first that got no answer or a 5xx (1; 0…5).
        var retries: Int?
    }

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

    /// The file at `path`, YAML or JSON (`ConfigurationDocument`).
    static func load(from path: String) throws(ConfigurationError) -> NodeConfigurationFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError.invalidFile(path, "cannot read the file")
        }
        return try ConfigurationDocument(bytes: data, path: path).file
    }

    /// The settings of a parsed file's top-level mapping: every key known, every value typed.
    static func decode(_ object: [String: Any], path: String) throws(ConfigurationError) -> NodeConfigurationFile {
        // A misspelt key would otherwise be ignored in silence, and its setting left at the default.
        for (place, known) in Self.sections {
            try Self.checkKeys(at: place[...], in: object, known: known, path: path, prefix: "")
        }
        do {
            let data = try JSONSerialization.data(withJSONObject: object)
            return try JSONDecoder().decode(NodeConfigurationFile.self, from: data)
        } catch let error as DecodingError {
            throw ConfigurationError.invalidFile(path, Self.describe(error, in: object))
        } catch {
            throw ConfigurationError.invalidFile(path, "\(error)")
        }
    }

    /// Where in the file each kind of settings object is, and its keys: `*` is any
    /// application, `[]` any element of a list.
    private static let sections: [([String], Set<String>)] = [
        ([], keys(of: NodeConfigurationFile())),
        (["nats"], keys(of: NATSSettings())),
        (["nats", "tls"], keys(of: TLSSettings())),
        (["tls"], keys(of: ServerTLSSettings())),
        (["tokens", "*"], keys(of: TokenSettings())),
        (["ladders", "*", "[]"], keys(of: LadderRung(name: "", height: 0, videoBitRate: 0))),
        (["hooks", "*"], keys(of: HookSettings())),
        (["hooks", "*", "*"], keys(of: HookEndpointSettings())),
    ]

    /// Checks the objects at `place` under `value` (named `prefix` so far) for unknown keys.
    private static func checkKeys(at place: ArraySlice<String>, in value: Any, known: Set<String>, path: String, prefix: String) throws(ConfigurationError) {
        guard let step = place.first else {
            guard let object = value as? [String: Any] else { return }
            try checkKeys(object, known: known, path: path, prefix: prefix)
            return
        }
        let rest = place.dropFirst()
        switch step {
        case "[]":
            for (index, element) in (value as? [Any] ?? []).enumerated() {
                try checkKeys(at: rest, in: element, known: known, path: path, prefix: "\(prefix.dropLast())[\(index)].")
            }
        case "*":
            for (key, element) in value as? [String: Any] ?? [:] {
                try checkKeys(at: rest, in: element, known: known, path: path, prefix: "\(prefix)\(key).")
            }
        default:
            guard let element = (value as? [String: Any])?[step] else { return }
            try checkKeys(at: rest, in: element, known: known, path: path, prefix: "\(prefix)\(step).")
        }
    }

    /// The property names of a settings struct (they are its JSON keys).
    private static func keys(of value: Any) -> Set<String> {
        Set(Mirror(reflecting: value).children.compactMap(\.label))
    }

    private static func checkKeys(_ object: [String: Any], known: Set<String>, path: String, prefix: String) throws(ConfigurationError) {
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw ConfigurationError.invalidFile(path, "unknown key '\(prefix)\(unknown)'")
        }
    }

    /// One line: the key, what was expected, what the file has.
    private static func describe(_ error: DecodingError, in object: [String: Any]) -> String {
        func keyPath(_ context: DecodingError.Context) -> String {
            context.codingPath.reduce(into: "") { path, key in
                if let index = key.intValue {
                    path += "[\(index)]"
                } else {
                    path += path.isEmpty ? key.stringValue : ".\(key.stringValue)"
                }
            }
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
