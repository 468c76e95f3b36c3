import Cluster
import ServiceLifecycle

/// The node's liveness beacon (`LivenessBeacon`, on a thread of its own) for the life of the
/// service group: every node sends one, the coordinator's own included (its lease table
/// judges others only while its own beacon makes the round trip).
struct LivenessBeaconService: Service {
    let beacon: LivenessBeacon

    func run() async throws {
        beacon.start()
        defer { beacon.stop() }
        try? await gracefulShutdown()
    }
}
