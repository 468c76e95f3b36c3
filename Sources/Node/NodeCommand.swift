import ArgumentParser
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

    @Option(help: "HTTP listening port: HTTP-FLV, HLS, the API, /metrics, /healthz (default 8080; ingest 8081, transcode 8082).")
    var httpPort: Int?

    @Option(help: "RTMPS listening port (RTMP over TLS; needs --tls-certificate and --tls-key). Off by default.")
    var rtmpsPort: Int?

    @Option(help: "HTTPS listening port (HTTP-FLV, HLS and the API over TLS). Off by default.")
    var httpsPort: Int?

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

    @Option(help: "JSON configuration file, see docs/configuration.md (default none).")
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

    func run() async throws {
        LargeAllocations.returnToTheSystem()
        var settings = NodeConfiguration()
        var fileLogLevel: String?
        var fileLogFormat: String?
        var fileHTTPPort: Int?
        if let config {
            let file = try NodeConfigurationFile.load(from: config)
            try settings.apply(file)
            fileLogLevel = file.logLevel
            fileLogFormat = file.logFormat
            fileHTTPPort = file.httpPort
        }
        if let bind { settings.bindHost = bind }
        if let rtmpPort { settings.rtmp.port = rtmpPort }
        if let rtmpsPort { settings.rtmpsPort = rtmpsPort }
        if let httpsPort { settings.httpsPort = httpsPort }
        if let tlsCertificate { settings.tlsCertificateFile = tlsCertificate }
        if let tlsKey { settings.tlsKeyFile = tlsKey }
        // Roles that serve players or operators take 8080; an ingest (health and metrics only)
        // 8081 and a transcoder 8082, so roles started side by side on one host do not collide.
        settings.httpPort = httpPort ?? fileHTTPPort ?? role.defaultHTTPPort
        if let dataDir { settings.dataDir = dataDir }
        settings.rtmp.host = settings.bindHost
        if let nats {
            let servers = nats.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            var bus = settings.nats ?? NATSBusConfiguration(servers: [])
            bus.servers = servers
            settings.nats = bus
        }
        // The NATS token from the environment (compose, systemd), so it need not be in the
        // URL, the command line or a file; a token in the URL or the file wins.
        if var bus = settings.nats, bus.token == nil, !bus.servers.contains(where: { $0.contains("@") }),
           let token = ProcessInfo.processInfo.environment["ESTUARY_NATS_TOKEN"], !token.isEmpty {
            bus.token = token
            settings.nats = bus
        }
        if let upstream {
            do {
                settings.upstreams = try Upstream.list(upstream)
            } catch {
                throw ValidationError("--upstream: \(error)")
            }
        }
        if let nodeId { settings.nodeID = nodeId }
        if let advertiseHost { settings.advertiseHost = advertiseHost }
        if let adminToken { settings.adminToken = adminToken }
        if let coordinatorNode { settings.coordinatorNode = coordinatorNode }
        if let database { settings.database = database }
        if let drainGrace {
            guard drainGrace.isFinite, (0...DrainRoutes.longestGrace).contains(drainGrace) else {
                throw ValidationError("--drain-grace must be within 0…\(Int(DrainRoutes.longestGrace)) seconds")
            }
            settings.drainGrace = .milliseconds(Int64(drainGrace * 1000))
        }
        if let drainReconnectTo { settings.drainReconnectTo = try NodeConfiguration.drainTarget(drainReconnectTo) }
        settings.nats?.name = settings.nodeID
        try settings.validate(role: role)
        let levelName = logLevel ?? fileLogLevel ?? "info"
        guard let level = Logger.Level(rawValue: levelName) else {
            throw ValidationError("unknown log level '\(levelName)': expected trace, debug, info, notice, warning, error or critical")
        }
        let format = logFormat ?? fileLogFormat ?? "text"
        guard ["text", "json"].contains(format) else {
            throw ValidationError("unknown log format '\(format)': expected text or json")
        }
        if checkConfig {
            // The keys of `tokens` parse (a JWKS whose keys cannot be used fails here).
            _ = try await NodeRuntime.tokenVerifier(settings)
            _ = try NodeRuntime.certificates(settings, logger: Logger(label: "check-config"))
            print("ok: role \(role.rawValue), node \(settings.nodeID), RTMP :\(settings.rtmp.port), HTTP :\(settings.httpPort)\(settings.nats.map { ", bus \($0.redactedServers)" } ?? "")")
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
        try await NodeRuntime(role: role, configuration: settings, metrics: metrics).run()
    }
}
