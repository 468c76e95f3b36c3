import ArgumentParser
import Foundation
import LibAV
import Logging
import Metrics
import Prometheus
import RTMP

/// `node`: one Estuary process. With no arguments it runs every role in-process.
@main
struct NodeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "node",
        abstract: "Estuary live-streaming node: RTMP in; RTMP and HTTP-FLV out."
    )

    enum Role: String, ExpressibleByArgument, CaseIterable {
        case all, ingest, transcode, relay, coordinator
    }

    @Option(help: "Which role this process plays (all = every role in one process).")
    var role: Role = .all

    @Option(help: "Address to listen on.")
    var bind: String?

    @Option(help: "RTMP listening port (publish and play).")
    var rtmpPort: Int?

    @Option(help: "HTTP listening port (HTTP-FLV, /metrics, /healthz).")
    var httpPort: Int?

    @Option(help: "Directory for state files.")
    var dataDir: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String?

    @Option(help: "JSON configuration file (see docs/configuration.md).")
    var config: String?

    @Option(help: "NATS server URL for cluster roles (not available in this build).")
    var nats: String?

    func run() async throws {
        var settings = NodeConfiguration()
        var fileLogLevel: String?
        if let config {
            let file = try NodeConfigurationFile.load(from: config)
            try settings.apply(file)
            fileLogLevel = file.logLevel
        }
        if let bind { settings.bindHost = bind }
        if let rtmpPort { settings.rtmp.port = rtmpPort }
        if let httpPort { settings.httpPort = httpPort }
        if let dataDir { settings.dataDir = dataDir }
        settings.rtmp.host = settings.bindHost

        let levelName = logLevel ?? fileLogLevel ?? "info"
        guard let level = Logger.Level(rawValue: levelName) else {
            throw ValidationError("unknown log level '\(levelName)'")
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        // libav and x264 write to stderr unless told otherwise; their lines join the node's logs.
        LibAVLogging.bootstrap(Logger(label: "estuary.libav"))
        let metrics = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: metrics))

        guard role == .all, nats == nil else {
            throw ConfigurationError.unsupportedRole(role.rawValue)
        }
        try FileManager.default.createDirectory(atPath: settings.dataDir, withIntermediateDirectories: true)
        try await EmbeddedNode(configuration: settings, metrics: metrics).run()
    }
}
