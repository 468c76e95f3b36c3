import Cluster
import Distributed
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A node's link to the coordinator: it registers, heartbeats at the interval the
/// coordinator asks for (1 s), reports what the node does, and hands the coordinator's
/// instructions (transcode jobs, kicks) to the role.
///
/// Live media never waits on it: the coordinator is only called from this loop, each call
/// bounded by the actor system's timeout, and a coordinator that is down only delays
/// instructions. While it is unreachable the loop keeps trying every interval, and
/// re-registers (with everything the node runs, so a restarted coordinator can reconcile)
/// as soon as it answers again.
struct CoordinatorLink: Service {
    struct Report: Sendable {
        var load: Double
        var streams: [StreamReport]
    }

    let system: NodeActorSystem
    let coordinatorNode: String
    let nodeID: String
    let role: Cluster.NodeRole
    let advertiseHost: String
    let logger: Logger
    let report: @Sendable () async -> Report
    let handle: @Sendable (NodeInstruction) async -> Void
    /// Whether the coordinator ever answered; until it has, the node is not ready (`/readyz`):
    /// a node pointed at no live coordinator would otherwise run uncoordinated, unnoticed.
    var status = Status()

    final class Status: Sendable {
        private let answered = Atomic<Bool>(false)
        /// When the coordinator last answered (uptime nanoseconds).
        private let lastAnswer = Atomic<UInt64>(0)
        var hasAnswered: Bool { answered.load(ordering: .relaxed) }
        func markAnswered() {
            answered.store(true, ordering: .relaxed)
            lastAnswer.store(NIODeadline.now().uptimeNanoseconds, ordering: .relaxed)
        }

        /// Whether the coordinator answered within `within` (three heartbeats by default):
        /// a call that would only wait out its timeout on a coordinator that is down is not
        /// made (the publish claims of `ClusterPublisherPolicy`).
        func answeredRecently(within: Duration = .seconds(3)) -> Bool {
            let last = lastAnswer.load(ordering: .relaxed)
            guard last > 0 else { return false }
            return .nanoseconds(Int64(clamping: NIODeadline.now().uptimeNanoseconds &- last)) <= within
        }
    }

    func run() async throws {
        let coordinator = try $CoordinatorAPI.resolve(id: CoordinatorAddress.id(onNode: coordinatorNode), using: system)
        await cancelWhenGracefulShutdown {
            await loop(coordinator)
        }
    }

    private func loop(_ coordinator: some CoordinatorAPI) async {
        var registered = false
        var interval = Duration.seconds(1)
        var failures = 0
        do {
            while !Task.isCancelled {
                let current = await report()
                do {
                    let reply: HeartbeatReply
                    if registered {
                        reply = try await coordinator.heartbeat(nodeID: nodeID, load: current.load, streams: current.streams)
                    } else {
                        reply = try await coordinator.register(node: NodeRegistration(nodeID: nodeID, role: role, advertiseHost: advertiseHost, streams: current.streams))
                        logger.info("registered with the coordinator", metadata: ["coordinator": "\(coordinatorNode)"])
                    }
                    registered = true
                    status.markAnswered()
                    failures = 0
                    interval = reply.heartbeatInterval
                    for instruction in reply.instructions {
                        if case .register = instruction {
                            registered = false
                        } else {
                            await handle(instruction)
                        }
                    }
                } catch {
                    // The node is stopping (another service failed, or a signal): not the coordinator's fault.
                    if error is CancellationError || Task.isCancelled { break }
                    failures += 1
                    // Register again once it answers: it may have restarted without us.
                    registered = false
                    if failures == 1 || failures % 30 == 0 {
                        logger.warning("the coordinator does not answer; media carries on", metadata: ["error": "\(error)", "attempts": "\(failures)"])
                    }
                }
                try await Task.sleep(for: interval)
            }
        } catch {
            // Cancelled: the node is shutting down.
        }
    }
}
