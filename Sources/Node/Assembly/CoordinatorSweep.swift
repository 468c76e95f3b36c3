import Coordinator
import ServiceLifecycle

/// The coordinator's sweep for dead nodes, as a service of the node.
struct CoordinatorSweep: Service {
    let state: CoordinatorState

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await state.run()
        }
    }
}
