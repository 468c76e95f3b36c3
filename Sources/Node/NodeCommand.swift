import ArgumentParser
import Configuration
import Edge
import Cluster
import Foundation
import LibAV
import Logging
import Metrics
import Prometheus
import RTMP

/// `estuary`: one Estuary process. With no arguments it runs every role in-process.
@main
struct NodeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "estuary",
        abstract: "Estuary live-streaming node: RTMP in; RTMP, HTTP-FLV and HLS out; one process or one role of a NATS cluster.",
        version: NodeCommand.version
    )

    /// The release this binary is (`estuary --version`).
    static let version = "0.14.0"

    @Option(help: "Which role this process plays (all = every role in one process).")
    var role: NodeRole = .all

    @Option(help: "Address to listen on (default 0.0.0.0).")
    var bind: String?

    @Option(help: "RTMP listening port, publish and play (default 1935).")
    var rtmpPort: Int?

    @Option(help: "HTTP listening port: HTTP-FLV, HLS, /healthz, /readyz (default 8080; ingest 8081, transcode 8082).")
    var httpPort: Int?

    @Option(help: "Address of the admin plane: the API, /metrics, the session endpoints (default 127.0.0.1).")
    var adminBind: String?

    @Option(help: "Port of the admin plane (default 8090; ingest 8091, transcode 8092).")
    var adminPort: Int?

    @Option(help: "RTMPS listening port (RTMP over TLS; needs --tls-certificate and --tls-key). Off by default.")
    var rtmpsPort: Int?

    @Option(help: "HTTPS listening port (HTTP-FLV, HLS and the API over TLS). Off by default.")
    var httpsPort: Int?

    @Option(help: "SRT listening port (UDP; MPEG-TS publishers, stream id publish:app/name or #!::r=app/name,m=publish). Off by default.")
    var srtPort: Int?

    @Option(help: "PEM file of the TLS certificate chain (read again on SIGHUP and when it changes).")
    var tlsCertificate: String?

    @Option(help: "PEM file of the TLS private key.")
    var tlsKey: String?

    @Option(help: "Directory for state files (default data).")
    var dataDir: String?

    @Option(help: "Log format: text or json, one object per line with the metadata as fields (default text).")
    var logFormat: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical (default info).")
    var logLevel: String?

    @Option(help: "Configuration file, YAML or JSON, see docs/configuration.md; reloaded on SIGHUP and when it changes (default none).")
    var config: String?

    @Option(help: "NATS server URLs for cluster roles, comma-separated, nats://host:4222 (default none: a node alone).")
    var nats: String?

    @Option(help: "Edge: the servers to pull streams from, in order of preference, comma-separated (http://origin:8080).")
    var upstream: String?

    @Option(help: "This node's id on the bus (default: the host name).")
    var nodeId: String?

    @Option(help: "The host name other nodes and players use to reach this node (default: the host name).")
    var advertiseHost: String?

    @Option(help: "The coordinator's node id (default: coordinator).")
    var coordinatorNode: String?

    @Option(help: "Coordinator: the bearer token of the admin API (default: the ESTUARY_ADMIN_TOKEN environment variable).")
    var adminToken: String?

    @Option(help: "Coordinator: the SQLite file (default: <data-dir>/estuary.sqlite).")
    var database: String?

    @Option(help: "Seconds a drain (SIGTERM, POST /api/v1/node/drain) waits for sessions to leave (default 8; 0: SIGTERM stops at once).")
    var drainGrace: Double?

    @Option(help: "Where a drain asks Enhanced RTMP v2 publishers to reconnect (rtmp://other:1935; default: the URL they used).")
    var drainReconnectTo: String?

    @Flag(help: "Check the arguments and configuration, print the resolved role, and exit.")
    var checkConfig = false

    /// The flags given, under the keys of the configuration file (`ConfigurationSources`).
    private var flagValues: [String: ConfigContent] {
        var values: [String: ConfigContent] = [:]
        if let bind { values["bindHost"] = .string(bind) }
        if let rtmpPort { values["rtmpPort"] = .int(rtmpPort) }
        if let httpPort { values["httpPort"] = .int(httpPort) }
        if let adminBind { values["adminBind"] = .string(adminBind) }
        if let adminPort { values["adminPort"] = .int(adminPort) }
        if let rtmpsPort { values["rtmpsPort"] = .int(rtmpsPort) }
        if let httpsPort { values["httpsPort"] = .int(httpsPort) }
        if let srtPort { values["srtPort"] = .int(srtPort) }
        if let tlsCertificate { values["tls.certificateFile"] = .string(tlsCertificate) }
        if let tlsKey { values["tls.keyFile"] = .string(tlsKey) }
        if let dataDir { values["dataDir"] = .string(dataDir) }
        if let logFormat { values["logFormat"] = .string(logFormat) }
        if let logLevel { values["logLevel"] = .string(logLevel) }
        if let nats { values["nats.servers"] = .stringArray(Self.list(nats)) }
        if let upstream { values["upstreams"] = .stringArray(Self.list(upstream)) }
        if let nodeId { values["nodeID"] = .string(nodeId) }
        if let advertiseHost { values["advertiseHost"] = .string(advertiseHost) }
        if let coordinatorNode { values["coordinatorNode"] = .string(coordinatorNode) }
        if let adminToken { values["adminToken"] = .string(adminToken) }
        if let database { values["database"] = .string(database) }
        if let drainGrace { values["drainGraceSeconds"] = .double(drainGrace) }
        if let drainReconnectTo { values["drainReconnectTo"] = .string(drainReconnectTo) }
        return values
    }

    private static func list(_ value: String) -> [String] {
        value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    func run() async throws {
        LargeAllocations.returnToTheSystem()
        let loader = ConfigurationLoader(role: role, sources: ConfigurationSources(flags: flagValues), path: config)
        let loaded = try loader.load(try loader.readDocument())
        let settings = loaded.configuration
        let level = Logger.Level(rawValue: loaded.resolved.logLevel ?? "info") ?? .info
        let format = loaded.resolved.logFormat ?? "text"
        if checkConfig {
            // The keys of `tokens` parse (a JWKS whose keys cannot be used fails here).
            _ = try await NodeRuntime.tokenVerifier(settings, requireRemoteKeys: true)
            _ = try NodeRuntime.certificates(settings, logger: Logger(label: "check-config"))
            print(NodeConfiguration.printable(settings.effectiveSettings(resolved: loaded.resolved)))
            print("ok: role \(role.rawValue), node \(settings.nodeID), RTMP :\(settings.rtmp.port), HTTP :\(settings.httpPort), admin \(settings.adminHost):\(settings.adminPort)\(settings.nats.map { ", bus \($0.redactedServers)" } ?? "")")
            return
        }

        LoggingSystem.bootstrap { label in
            if format == "json" {
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        // libav and x264 write to stderr unless told otherwise; their lines join the node's logs.
        LibAVLogging.bootstrap(Logger(label: "estuary.libav"))
        let metrics = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: metrics))

        try FileManager.default.createDirectory(atPath: settings.dataDir, withIntermediateDirectories: true)
        try await NodeRuntime(role: role, configuration: settings, metrics: metrics, loader: loader, resolved: loaded.resolved).run()
    }
}
