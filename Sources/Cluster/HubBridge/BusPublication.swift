import Logging
import Media
import NIOConcurrencyHelpers
import NIOCore

/// Puts one hub's frames on the cluster bus, for relays and transcoders on other nodes:
/// every frame on `media.<app>.<name>.<rendition>` (see `MediaBusPublisher`), answers to
/// GOP requests on `gop.…` with the hub's metadata, configuration records and cached GOP,
/// and an empty message on `end.…` when the stream ends.
///
/// The hub feeds it through a raw-frame subscriber that is drained on the publisher's own
/// thread; publishing to NATS only appends to the connection's buffer (libnats flushes on
/// its own thread), so the publisher is never blocked by the relays. The subscriber's queue
/// is bounded like any viewer's: if the bus stalls, the forwarding skips to the next
/// keyframe instead of pinning memory.
public final class BusPublication: Sendable {
    public let subject: MediaBusSubject
    private let hub: StreamHub
    private let subscriber: HubSubscriber
    private let gopResponder: NIOLockedValueBox<BusSubscription?>

    /// Starts forwarding `hub` on its rendition's subject (`src` for a source).
    public init(hub: StreamHub, bus: any Bus, logger: Logger) throws(BusError) {
        let subject = try MediaBusSubject(hub.path)
        self.subject = subject
        self.hub = hub
        let publisher = MediaBusPublisher(bus: bus, subject: subject, epoch: UInt32.random(in: 1...UInt32.max))
        let failures = NIOLockedValueBox(0)
        let endSubject = MediaBusGOP.endSubject(for: subject)
        self.subscriber = HubSubscriber(format: nil, maxQueueBytes: hub.configuration.subscriberQueueBytes, coalescesWakeUps: false) { subscriber in
            let batch = subscriber.drain()
            for packet in batch.packets {
                do {
                    try publisher.publish(packet.frame)
                } catch {
                    // A lost frame is a sequence gap for the receivers, who resume at the
                    // next keyframe; log the first failure of a run, not every frame.
                    let count = failures.withLockedValue { $0 += 1; return $0 }
                    if count == 1 || count % 1000 == 0 {
                        logger.warning("cannot publish to the bus", metadata: ["subject": "\(subject)", "error": "\(error)", "failures": "\(count)"])
                    }
                }
            }
            if batch.ended {
                try? bus.publish(subject: endSubject, payload: ByteBuffer())
            }
        }
        // A GOP request: a temporary subscriber receives exactly what a new viewer would.
        let hub = hub
        let responder = try bus.subscribe(subject: MediaBusGOP.subject(for: subject)) { message in
            let probe = HubSubscriber(format: nil, maxQueueBytes: Int.max, coalescesWakeUps: false) { _ in }
            guard hub.subscribe(probe) else { return }
            let frames = probe.drain().packets.map(\.frame)
            hub.unsubscribe(probe)
            try? bus.respond(to: message, payload: MediaBusGOP.encode(frames, maxBytes: bus.maxPayload))
        }
        self.gopResponder = NIOLockedValueBox(responder)
        hub.subscribe(subscriber)
    }

    /// Stops forwarding and answering.
    public func cancel() {
        hub.unsubscribe(subscriber)
        gopResponder.withLockedValue { $0 }?.cancel()
    }
}
