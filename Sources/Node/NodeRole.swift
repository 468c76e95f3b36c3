import ArgumentParser
import Cluster

/// `--role`: the cluster's own role type, so a node registers with the coordinator under
/// the role it was started with.
extension NodeRole: ExpressibleByArgument {}

extension NodeRole {
    /// The HTTP port a role listens on unless told otherwise. Roles with players or operators
    /// (every role at once, a relay, the coordinator's admin API) take 8080; an ingest and a
    /// transcoder serve only health and metrics, on ports of their own, so that roles started
    /// side by side on one host do not collide.
    var defaultHTTPPort: Int {
        switch self {
        case .all, .relay, .edge, .coordinator: 8080
        case .ingest: 8081
        case .transcode: 8082
        }
    }

    /// The admin plane's port (the API, `/metrics`): ten above the HTTP port, so roles on one
    /// host do not collide here either.
    var defaultAdminPort: Int { defaultHTTPPort + 10 }
}
