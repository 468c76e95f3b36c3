import Foundation
import Media
import RTMP
import Relay
import Transcode

extension NodeConfiguration {
    /// Every setting in force, as the file would spell it: what `--check-config` prints and
    /// what `docs/configuration.md`'s defaults are tested against. The keyed sections with
    /// no default (`hooks`, `tokens`, `forwards`, `pulls`, `nats`) are the resolved file's.
    func effectiveSettings(resolved: NodeConfigurationFile) -> NodeConfigurationFile {
        func seconds(_ duration: Duration) -> Double {
            let (whole, attoseconds) = duration.components
            return Double(whole) + Double(attoseconds) / 1e18
        }
        var file = resolved
        file.bindHost = bindHost
        file.rtmpPort = rtmp.port
        file.httpPort = httpPort
        file.adminBind = adminHost
        file.adminPort = adminPort
        file.rtmpsPort = rtmpsPort
        file.httpsPort = httpsPort
        file.srtPort = srtPort
        file.srtLatencyMilliseconds = srtLatencyMilliseconds
        file.srtMaxPublishers = srtMaxPublishers
        file.srtMaxPlayers = srtMaxPlayers
        file.srtMaxCallersPerAddress = srtMaxCallersPerAddress
        file.srtHandshakeWaitMilliseconds = srtHandshakeWaitMilliseconds
        file.srtPassphrase = srtPassphrase
        file.dataDir = dataDir
        file.logLevel = resolved.logLevel ?? "info"
        file.logFormat = resolved.logFormat ?? "text"
        file.maxMessageSize = rtmp.chunkLimits.maxMessageSize
        file.maxChunkSize = rtmp.chunkLimits.maxChunkSize
        file.maxChunkStreams = rtmp.chunkLimits.maxChunkStreams
        file.subscriberQueueBytes = hub.subscriberQueueBytes
        file.gopCacheMaxFrames = hub.gopCacheMaxFrames
        file.gopCacheMaxBytes = hub.gopCacheMaxBytes
        file.publisherIdleTakeoverSeconds = seconds(hub.publisherIdleTakeover)
        file.publisherGraceSeconds = seconds(publisherGrace)
        file.handshakeTimeoutSeconds = seconds(rtmp.handshakeTimeout)
        file.connectTimeoutSeconds = seconds(rtmp.connectTimeout)
        file.sessionStartTimeoutSeconds = seconds(rtmp.sessionStartTimeout)
        file.publisherIdleTimeoutSeconds = seconds(rtmp.publisherIdleTimeout)
        file.writeStallTimeoutSeconds = seconds(rtmp.writeStallTimeout)
        file.httpHeaderTimeoutSeconds = seconds(httpGuard.headerTimeout)
        file.httpIdleTimeoutSeconds = seconds(httpIdleTimeout)
        file.maxCommandMessageSize = rtmp.chunkLimits.maxCommandMessageSize
        file.maxDataMessageSize = rtmp.chunkLimits.maxDataMessageSize
        file.maxMetadataBytes = rtmp.maxMetadataBytes
        file.maxMetadataValues = rtmp.maxMetadataValues
        file.maxReassemblyBytes = rtmp.chunkLimits.nodeBudget?.limit
        file.maxReassemblyBytesPerConnection = rtmp.chunkLimits.maxBufferedBytes
        file.messageStallTimeoutSeconds = seconds(rtmp.messageStallTimeout)
        file.socketSendBufferBytes = rtmp.socketSendBufferBytes ?? 0
        file.maxConnections = rtmp.connectionLimits.maxConnections
        file.maxConnectionsPerAddress = rtmp.connectionLimits.maxConnectionsPerAddress
        file.limitLoopbackConnections = rtmp.connectionLimits.limitLoopback
        file.negotiateVideoCodecs = rtmp.negotiateVideoCodecs
        file.viewerWakeIntervalMilliseconds = Int(seconds(hub.wakeInterval) * 1000)
        file.mergeWritesAboveViewers = hub.wakeLoad?.lowViewers
        file.mergeWritesFullAtViewers = hub.wakeLoad?.fullViewers
        file.hlsSegmentSeconds = seconds(hls.targetSegmentDuration)
        file.hlsPartSeconds = seconds(hls.partTargetDuration)
        file.hlsWindowSegments = hls.windowSegments
        file.hlsMaxBytes = hls.maxNodeBytes
        file.maxTranscodes = maxTranscodes
        file.maxStreams = maxStreams
        file.upstreams = resolved.upstreams ?? []
        file.ladders = ladders.mapValues(\.rungs)
        file.nodeID = nodeID
        file.advertiseHost = advertiseHost
        file.coordinatorNode = coordinatorNode
        file.requireStreamKeys = requireStreamKeys
        file.adminToken = adminToken
        file.database = databasePath
        file.drainGraceSeconds = seconds(drainGrace)
        file.admissionTimeoutSeconds = seconds(admissionTimeout)
        file.drainReconnectTo = drainReconnectTo
        return file
    }

    /// The settings as YAML-compatible JSON, keys sorted, every secret masked (tokens,
    /// passwords, signing secrets, credentials in NATS URLs).
    static func printable(_ file: NodeConfigurationFile) -> String {
        guard let data = try? JSONEncoder().encode(file), var object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return "{}" }
        object = mask(object) as? [String: Any] ?? [:]
        guard let printed = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]) else { return "{}" }
        return String(decoding: printed, as: UTF8.self)
    }

    /// Keys whose values are secrets, wherever they appear.
    static let secretKeys: Set<String> = ["adminToken", "token", "password", "hmacSecret", "jwtSecret", "srtPassphrase"]

    private static func mask(_ value: Any, key: String = "") -> Any {
        switch value {
        case let object as [String: Any]:
            return Dictionary(uniqueKeysWithValues: object.map { ($0.key, secretKeys.contains($0.key) && !($0.value is NSNull) ? "********" as Any : mask($0.value, key: $0.key)) })
        case let array as [Any]:
            return array.map { mask($0, key: key) }
        case let string as String where key == "servers" || key == "upstreams":
            // nats://TOKEN@host:4222, http://user:password@origin
            guard let scheme = string.firstRange(of: "://"), let at = string[scheme.upperBound...].lastIndex(of: "@") else { return string }
            return String(string[..<scheme.upperBound]) + "********" + String(string[at...])
        default:
            return value
        }
    }
}

extension NodeConfiguration {
    /// This configuration with what only a restart changes (`ConfigurationReloader.restartOnlyKeys`)
    /// as it is in `running`.
    func keepingRestartOnlySettings(of running: NodeConfiguration) -> NodeConfiguration {
        var kept = self
        kept.bindHost = running.bindHost
        kept.rtmp.host = running.rtmp.host
        kept.rtmp.port = running.rtmp.port
        kept.httpPort = running.httpPort
        kept.adminHost = running.adminHost
        kept.adminPort = running.adminPort
        kept.rtmpsPort = running.rtmpsPort
        kept.httpsPort = running.httpsPort
        kept.srtPort = running.srtPort
        kept.srtLatencyMilliseconds = running.srtLatencyMilliseconds
        kept.srtMaxPublishers = running.srtMaxPublishers
        kept.srtMaxPlayers = running.srtMaxPlayers
        kept.srtMaxCallersPerAddress = running.srtMaxCallersPerAddress
        kept.srtHandshakeWaitMilliseconds = running.srtHandshakeWaitMilliseconds
        kept.srtPassphrase = running.srtPassphrase
        kept.tlsCertificateFile = running.tlsCertificateFile
        kept.tlsKeyFile = running.tlsKeyFile
        kept.dataDir = running.dataDir
        kept.nats = running.nats
        kept.nodeID = running.nodeID
        kept.advertiseHost = running.advertiseHost
        kept.coordinatorNode = running.coordinatorNode
        kept.database = running.database
        kept.upstreams = running.upstreams
        kept.adminToken = running.adminToken
        kept.httpIdleTimeout = running.httpIdleTimeout
        kept.rtmp.socketSendBufferBytes = running.rtmp.socketSendBufferBytes
        kept.httpGuard.socketSendBufferBytes = running.httpGuard.socketSendBufferBytes
        kept.rtmp.chunkLimits.nodeBudget = running.rtmp.chunkLimits.nodeBudget
        kept.hls = running.hls
        kept.drainGrace = running.drainGrace
        kept.drainReconnectTo = running.drainReconnectTo
        return kept
    }
}
