import Media
import RTMP

/// Answers play requests from the streams this process holds.
public struct Playback: Sendable {
    public let registry: StreamRegistry

    public init(registry: StreamRegistry) {
        self.registry = registry
    }

    public func play(_ request: RTMPPlayRequest) async -> RTMPPlayDecision {
        guard let hub = await registry.resolve(request.path) else { return .notFound }
        return .accept(hub: hub)
    }
}
