import Logging
import Media
import NIOConcurrencyHelpers
import Session

/// The node's static pulls (`pulls` in the configuration): started with the node, changed
/// by a configuration reload (`update`), stopped together with the node.
public final class StaticPulls: Sendable {
    private let running: NIOLockedValueBox<[StreamPath: StaticPull]>
    private let admission: any SessionAdmission
    private let configuration: StaticPull.Configuration
    private let logger: Logger

    /// Starts one pull per (stream, source URL).
    public init(_ sources: [StreamPath: String], admission: any SessionAdmission, configuration: StaticPull.Configuration = .init(), logger: Logger) {
        self.admission = admission
        self.configuration = configuration
        self.logger = logger
        running = NIOLockedValueBox(Dictionary(uniqueKeysWithValues: sources.map { path, source in
            (path, StaticPull(path: path, source: source, admission: admission, configuration: configuration, logger: logger))
        }))
    }

    public var pulls: [StaticPull] {
        running.withLockedValue { $0 }.sorted { "\($0.key)" < "\($1.key)" }.map(\.value)
    }

    public func statuses() -> [StaticPull.Status] {
        pulls.map(\.currentStatus)
    }

    /// Makes the pulls `sources` (a configuration reload): a pull whose stream is no longer
    /// listed, or whose source changed, stops and unpublishes; a new one starts; one that
    /// stays as it was keeps running, its viewers undisturbed.
    public func update(_ sources: [StreamPath: String]) async {
        let (stopping, started) = running.withLockedValue { running -> ([StaticPull], Int) in
            var stopping: [StaticPull] = []
            for (path, pull) in running where sources[path] != pull.source {
                stopping.append(pull)
                running[path] = nil
            }
            var started = 0
            for (path, source) in sources where running[path] == nil {
                running[path] = StaticPull(path: path, source: source, admission: admission, configuration: configuration, logger: logger)
                started += 1
            }
            return (stopping, started)
        }
        for pull in stopping { pull.stop() }
        for pull in stopping { await pull.stopped() }
        if !stopping.isEmpty || started > 0 {
            logger.info("pulls reconfigured", metadata: ["stopped": "\(stopping.count)", "started": "\(started)"])
        }
    }

    /// Stops every pull and waits for each to unpublish.
    public func stop() async {
        let pulls = running.withLockedValue { running in
            defer { running = [:] }
            return Array(running.values)
        }
        for pull in pulls { pull.stop() }
        for pull in pulls { await pull.stopped() }
    }
}
