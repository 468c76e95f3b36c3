import Cluster
import Configuration
import RTMP
import Foundation

/// Turns a version of the configuration file into a node's checked settings, with the
/// environment and flags laid over (`ConfigurationSources`): at start, at `--check-config`,
/// and on every reload (`ConfigurationReloader`), so all three check the same things.
struct ConfigurationLoader: Sendable {
    let role: NodeRole
    let sources: ConfigurationSources
    /// The file given with `--config`, if any.
    let path: String?

    /// What a version of the file (nil: none) resolves to.
    struct Loaded: Sendable {
        let configuration: NodeConfiguration
        /// The settings as the sources gave them (unset keys nil).
        let resolved: NodeConfigurationFile
    }

    func load(_ document: ConfigurationDocument?) throws -> Loaded {
        let resolved = try sources.resolve(document)
        var configuration = NodeConfiguration()
        try configuration.apply(resolved)
        // Roles that serve players or operators take 8080; an ingest (health and metrics only)
        // 8081 and a transcoder 8082, so roles started side by side on one host do not collide.
        if resolved.httpPort == nil { configuration.httpPort = role.defaultHTTPPort }
        if resolved.adminPort == nil { configuration.adminPort = role.defaultAdminPort }
        configuration.rtmp.host = configuration.bindHost
        configuration.nats?.name = configuration.nodeID
        try configuration.validate(role: role)
        let level = resolved.logLevel ?? "info"
        guard ["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(level) else {
            throw ConfigurationError.invalidValue("unknown log level '\(level.prefix(40))': expected trace, debug, info, notice, warning, error or critical")
        }
        let format = resolved.logFormat ?? "text"
        guard ["text", "json"].contains(format) else {
            throw ConfigurationError.invalidValue("unknown log format '\(format.prefix(40))': expected text or json")
        }
        return Loaded(configuration: configuration, resolved: resolved)
    }

    /// The file as it is now (nil without `--config`).
    func readDocument() throws -> ConfigurationDocument? {
        guard let path else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError.invalidFile(path, "cannot read the file")
        }
        return try ConfigurationDocument(bytes: data, path: path)
    }
}
