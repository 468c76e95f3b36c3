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
    case unsupportedRole(String)

    var description: String {
        switch self {
        case .invalidFile(let path, let why): "cannot read configuration \(path): \(why)"
        case .invalidValue(let why): "invalid configuration: \(why)"
        case .unsupportedRole(let role): "role '\(role)' needs a cluster bus (--nats), which this build does not have yet; use --role all"
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
