import Logging
import Media
import Session

/// The node's static pulls (`pulls` in the configuration), started together and stopped
/// together with the node.
public final class StaticPulls: Sendable {
    public let pulls: [StaticPull]

    /// Starts one pull per (stream, source URL).
    public init(_ sources: [StreamPath: String], admission: any SessionAdmission, configuration: StaticPull.Configuration = .init(), logger: Logger) {
        pulls = sources.sorted { "\($0.key)" < "\($1.key)" }.map { path, source in
            StaticPull(path: path, source: source, admission: admission, configuration: configuration, logger: logger)
        }
    }

    public func statuses() -> [StaticPull.Status] {
        pulls.map(\.currentStatus)
    }

    /// Stops every pull and waits for each to unpublish.
    public func stop() async {
        for pull in pulls { pull.stop() }
        for pull in pulls { await pull.stopped() }
    }
}
