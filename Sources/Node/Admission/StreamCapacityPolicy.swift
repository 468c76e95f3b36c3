import Media
import Session

/// The most streams (hubs, with their GOP caches and segmenters) a node carries: a publish
/// of a new stream beyond it is refused; a publisher resuming a stream that is here is not.
struct StreamCapacityPolicy: AdmissionPolicy {
    let registry: StreamRegistry
    let limit: Int

    func check(_ request: PublishRequest) async -> PolicyRefusal? {
        guard await registry.hub(for: request.path) == nil, await registry.streams.count >= limit else { return nil }
        return PolicyRefusal(
            .unavailable("this node carries at most \(limit) streams; try again later"),
            metric: "stream_capacity", logged: "the node's \(limit) streams are live"
        )
    }
}
