import Media
import ServiceLifecycle

/// Ends every stream when the node shuts down, so that viewers (including endless
/// HTTP-FLV responses) finish cleanly before the listeners stop.
struct StreamShutdown: Service {
    let registry: StreamRegistry

    func run() async throws {
        try? await gracefulShutdown()
        await registry.endAll()
    }
}
