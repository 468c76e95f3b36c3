import ArgumentParser
import Cluster

/// `--role`: the cluster's own role type, so a node registers with the coordinator under
/// the role it was started with.
extension NodeRole: ExpressibleByArgument {}
