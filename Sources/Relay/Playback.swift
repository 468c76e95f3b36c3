import Media
import Session

/// Answers play requests, from any protocol, with the streams this process holds or (on a
/// relay) can mirror from the bus.
public struct Playback: Sendable {
    public let registry: StreamRegistry

    public init(registry: StreamRegistry) {
        self.registry = registry
    }

    public func play(_ request: PlayRequest) async -> PlayDecision {
        guard let hub = await registry.resolve(request.path) else { return .refuse(.notFound("No such stream: \(request.path)")) }
        return .accept(hub: hub)
    }
}
