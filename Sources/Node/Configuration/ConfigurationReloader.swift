import Configuration
import Foundation
import Logging
import Metrics
import ServiceLifecycle
import SystemPackage
import Tokens

/// Reloads the configuration file on SIGHUP and within 2 s of a change (swift-configuration's
/// `ReloadingFileProvider`, which reads it anew when its modification time changes), and
/// gives the running node what can change live (`LiveConfiguration`): limits for the
/// connections accepted afterwards, ladders, stream keys, hooks, tokens, capacities,
/// forwards and pulls. No session is dropped for a reload; a forward or a pull the new file
/// no longer lists stops, as the operator asked.
///
/// What only a restart changes (listening addresses and ports, the bus, the node's id, the
/// state directory, logging, HLS timing, TLS file names: `restartOnlyKeys`) is reported and
/// left as it is. A file that does not parse or check is refused as a whole: logged, counted
/// (`estuary_config_reloads_total{result="failed"}`), and the running configuration stays.
struct ConfigurationReloader: Service {
    let provider: ReloadingFileProvider<ConfigurationDocument>
    let loader: ConfigurationLoader
    let live: LiveConfiguration
    let logger: Logger

    /// Keys of the file that a running node does not take.
    static let restartOnlyKeys: Set<String> = [
        "bindHost", "rtmpPort", "httpPort", "adminBind", "adminPort", "rtmpsPort", "httpsPort", "srtPort", "srtLatencyMilliseconds", "srtPassphrase", "srtMaxPublishers", "srtMaxPlayers", "srtMaxCallersPerAddress", "srtHandshakeWaitMilliseconds", "tls", "dataDir", "logLevel", "logFormat",
        "nats", "nodeID", "advertiseHost", "coordinatorNode", "database", "upstreams", "adminToken",
        "httpIdleTimeoutSeconds", "socketSendBufferBytes", "maxReassemblyBytes",
        "hlsSegmentSeconds", "hlsPartSeconds", "hlsWindowSegments", "hlsMaxBytes", "drainGraceSeconds", "drainReconnectTo",
    ]

    /// Nil without a configuration file.
    static func make(loader: ConfigurationLoader, live: LiveConfiguration, logger: Logger) async throws -> ConfigurationReloader? {
        guard let path = loader.path else { return nil }
        var options = ConfigurationDocument.ParsingOptions()
        options.path = path
        options.rejected = { error in
            logger.error("configuration not reloaded: \(error); the running configuration stays")
            Counter(label: "estuary_config_reloads_total", dimensions: [("result", "failed")]).increment()
        }
        // The provider logs each poll at debug; its own lines stay out of the node's.
        var quiet = logger
        quiet.logLevel = .warning
        let provider = try await ReloadingFileProvider<ConfigurationDocument>(
            parsingOptions: options, filePath: FilePath(path), pollInterval: .seconds(2), logger: quiet
        )
        return ConfigurationReloader(provider: provider, loader: loader, live: live, logger: logger)
    }

    func run() async throws {
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await provider.run() }
            try await provider.watchSnapshot { updates in
                for try await snapshot in updates.cancelOnGracefulShutdown() {
                    guard let document = snapshot as? ConfigurationDocument else { continue }
                    await reload(document)
                }
            }
            group.cancelAll()
        }
    }

    /// Checks a new version of the file as a start would, then applies what can change.
    func reload(_ document: ConfigurationDocument) async {
        let loaded: ConfigurationLoader.Loaded
        let tokens: TokenVerifier?
        do {
            loaded = try loader.load(document)
            tokens = try await NodeRuntime.tokenVerifier(loaded.configuration, logger: logger)
        } catch {
            logger.error("configuration not reloaded: \(error); the running configuration stays")
            Counter(label: "estuary_config_reloads_total", dimensions: [("result", "failed")]).increment()
            return
        }
        let old = live.current
        let changed = Self.changedKeys(old.effectiveSettings(resolved: live.resolved), loaded.configuration.effectiveSettings(resolved: loaded.resolved))
        guard !changed.isEmpty else { return }
        let restartOnly = changed.filter(Self.restartOnlyKeys.contains)
        let applied = changed.filter { !Self.restartOnlyKeys.contains($0) }
        if !restartOnly.isEmpty {
            logger.warning("configuration: \(restartOnly.joined(separator: ", ")) changed in the file; they take effect at the next start, and the running values stay")
        }
        let configuration = loaded.configuration.keepingRestartOnlySettings(of: old)
        live.setResolved(loaded.resolved)
        if !applied.isEmpty {
            await live.apply(configuration, tokens: tokens)
            logger.notice("configuration reloaded: \(applied.joined(separator: ", "))")
        }
        Counter(label: "estuary_config_reloads_total", dimensions: [("result", "applied")]).increment()
    }

    /// The top-level keys whose values differ.
    static func changedKeys(_ old: NodeConfigurationFile, _ new: NodeConfigurationFile) -> [String] {
        func object(_ file: NodeConfigurationFile) -> [String: Any] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            guard let data = try? encoder.encode(file), let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [:] }
            return object
        }
        let before = object(old)
        let after = object(new)
        return Set(before.keys).union(after.keys).sorted().filter { key in
            let encoded = { (value: Any?) -> Data? in
                value.flatMap { try? JSONSerialization.data(withJSONObject: ["v": $0], options: .sortedKeys) }
            }
            return encoded(before[key]) != encoded(after[key])
        }
    }
}

