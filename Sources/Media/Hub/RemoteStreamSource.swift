/// Where a node finds streams that are not published to it: a relay's hubs are fed from
/// the cluster bus (see `BusStreamSource` in Relay). The registry asks its source when a
/// viewer wants a path it has no hub for, and tells it whenever a viewer looks a path up,
/// so the source can keep a stream while it is watched and let it go when it is not.
public protocol RemoteStreamSource: Sendable {
    /// A hub fed from elsewhere for `path`, registered in `registry`; nil when no node
    /// publishes it.
    func open(_ path: RenditionPath, registry: StreamRegistry) async -> StreamHub?

    /// A viewer asked for `path` (a playlist or segment request counts).
    func touch(_ path: RenditionPath)
}
