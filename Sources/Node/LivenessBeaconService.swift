import Cluster
import ServiceLifecycle

/// The node's liveness beacon (`LivenessBeacon`, on a thread of its own) for the life of the
/// service group: every node sends one, the coordinator's own included (its lease table
/// judges others only while its own beacon makes the round trip).
///
/// It is the group's first service, so the last to stop: the node beacons while its other
/// services wind down, and at the end says it leaves, so the coordinator records a
/// graceful exit as one (`node.left`) rather than as a death found by its probe. A group
/// that is cancelled (a service failed) stops the beacon without a word.
struct LivenessBeaconService: Service {
    let beacon: LivenessBeacon

    func run() async throws {
        beacon.start()
        do {
            try await gracefulShutdown()
        } catch {
            // Cancelled: the group failed (a service threw), not a graceful exit. The node
            // says nothing and is found gone, counted as a death.
            beacon.stop()
            return
        }
        await beacon.leave()
    }
}
