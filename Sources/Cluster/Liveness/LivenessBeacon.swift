import Foundation
import NIOCore
import Synchronization

/// A node's sign of life for the coordinator, sent from a thread of its own.
///
/// The coordinator's heartbeat carries reports and instructions and goes through Swift's
/// cooperative pool (two threads here) and the coordinator's SQLite: a node whose media
/// saturates the pool missed it and was declared dead while it was serving viewers. The
/// beacon is the liveness half alone: a few bytes on `liveness.beacon.<node>` every
/// `interval`, published synchronously from a dedicated OS thread (the kernel wakes a thread
/// that sleeps ahead of busy ones), and an answer to `liveness.probe.<node>` from the bus's
/// delivery thread. A process that is gone stops both at once; the coordinator reads the
/// missing answer to a probe as the end of its connection (`LeaseTable`).
public final class LivenessBeacon: Sendable {
    /// How often the beacon is sent.
    public static let defaultInterval: Duration = .milliseconds(250)

    private let bus: any Bus
    private let nodeID: String
    private let interval: Duration
    private let running = Atomic<Bool>(false)
    private let probe = Mutex<BusSubscription?>(nil)

    public init(bus: any Bus, nodeID: String, interval: Duration = LivenessBeacon.defaultInterval) {
        self.bus = bus
        self.nodeID = nodeID
        self.interval = interval
    }

    /// Starts the thread and the probe answer; idempotent.
    public func start() {
        guard !running.exchange(true, ordering: .relaxed) else { return }
        let bus = bus
        let answer = try? bus.subscribe(subject: LivenessSubject.probe(nodeID)) { message in
            try? bus.respond(to: message, payload: ByteBuffer())
        }
        probe.withLock { $0 = answer }
        let subject = LivenessSubject.beacon(nodeID)
        let microseconds = UInt32(clamping: interval.components.seconds * 1_000_000 + interval.components.attoseconds / 1_000_000_000_000)
        let thread = Thread { [self] in
            var sequence: UInt64 = 0
            while self.running.load(ordering: .relaxed) {
                var payload = ByteBuffer()
                payload.writeInteger(sequence)
                sequence &+= 1
                // A publish without a connection fails; the next one tries again.
                try? bus.publish(subject: subject, payload: payload)
                usleep(microseconds)
            }
        }
        thread.name = "liveness-beacon"
        thread.start()
    }

    /// Stops the beacon (within one interval) and the probe answer.
    public func stop() {
        running.store(false, ordering: .relaxed)
        probe.withLock { subscription in
            subscription?.cancel()
            subscription = nil
        }
    }

    /// Stops the beacon and tells the coordinator that the node leaves on its own (a drain,
    /// a signal), so it is recorded as having left, not as dead: an operator alerting on
    /// dead nodes is not paged by a rolling restart. A request, not a publish, so the
    /// message is on the server (and taken) before the node closes its connection; at
    /// most `timeout`, and a coordinator that does not answer leaves the node to be found
    /// gone by its probe, as before. Returns whether the coordinator took it.
    @discardableResult
    public func leave(timeout: Duration = .milliseconds(500)) async -> Bool {
        stop()
        do {
            _ = try await bus.request(subject: LivenessSubject.leave(nodeID), payload: ByteBuffer(), timeout: timeout)
            return true
        } catch {
            return false
        }
    }
}

/// The subjects of the liveness beacon and its probe.
public enum LivenessSubject {
    public static func beacon(_ nodeID: String) -> String { "liveness.beacon.\(nodeID)" }
    public static func probe(_ nodeID: String) -> String { "liveness.probe.\(nodeID)" }
    /// A node's word that it leaves (`LivenessBeacon.leave`), answered by the coordinator.
    public static func leave(_ nodeID: String) -> String { "liveness.leave.\(nodeID)" }
    /// What the coordinator subscribes to.
    public static let allBeacons = "liveness.beacon.*"
    public static let allLeaves = "liveness.leave.*"

    /// The node id of a beacon's subject, or nil for anything else.
    public static func nodeID(ofBeacon subject: String) -> String? {
        nodeID(of: subject, after: "liveness.beacon.")
    }

    /// The node id of a leave's subject, or nil for anything else.
    public static func nodeID(ofLeave subject: String) -> String? {
        nodeID(of: subject, after: "liveness.leave.")
    }

    private static func nodeID(of subject: String, after prefix: String) -> String? {
        guard subject.hasPrefix(prefix) else { return nil }
        let id = subject.dropFirst(prefix.count)
        guard !id.isEmpty, id.count <= 64, !id.contains(".") else { return nil }
        return String(id)
    }
}
