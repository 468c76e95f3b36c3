import Logging
import Media
import NIOConcurrencyHelpers
import NIOCore

/// Puts one hub's frames on the cluster bus, for relays and transcoders on other nodes:
/// every frame on `media.<app>.<name>.<rendition>` (see `MediaBusPublisher`), answers to
/// GOP requests on `gop.…` with the hub's metadata, configuration records and cached GOP,
/// and a message on `end.…` when the stream ends, whose payload is the publication's epoch
/// (4 bytes, big-endian): a receiver that already follows a newer publisher on the subject
/// (an encoder that moved to another ingest) ignores the end of the one it left.
///
/// The hub feeds it through an inline `FrameSubscription`, drained on the publisher's own
/// thread; publishing to NATS only appends to the connection's buffer (libnats flushes on
/// its own thread), so the publisher is never blocked by the relays. The subscriber's queue
/// is bounded like any viewer's: if the bus stalls, the forwarding skips to the next
/// keyframe instead of pinning memory.
public final class BusPublication: Sendable {
    public let subject: MediaBusSubject
    private let subscription: FrameSubscription?
    private let gopResponder: NIOLockedValueBox<BusSubscription?>

    /// Starts forwarding `hub` on its rendition's subject (`src` for a source). A rung of a
    /// transcode job passes through the job's `handover`, which holds or drops frames
    /// while the job moves between transcoders. `hasOwnClock`: the hub's timeline is its
    /// publisher's own (an ingest's hubs; not a rung, which continues its source's), so
    /// receivers re-base a new publication of the subject to continue theirs. An ingest's
    /// publication (`checks`) also answers the other ingests' publisher checks
    /// (`MediaBusPublisherCheck`), on the GOP subject.
    public init(
        hub: StreamHub, bus: any Bus, logger: Logger, handover: RungHandover? = nil, hasOwnClock: Bool = false,
        checks: PublisherChecks? = nil
    ) throws(BusError) {
        let subject = try MediaBusSubject(hub.path)
        self.subject = subject
        let epoch = UInt32.random(in: 1...UInt32.max)
        let publisher = MediaBusPublisher(bus: bus, subject: subject, epoch: epoch, hasOwnClock: hasOwnClock)
        let failures = NIOLockedValueBox(0)
        let endSubject = MediaBusGOP.endSubject(for: subject)
        let publish: @Sendable (MediaFrame) -> Void = { frame in
            do {
                try publisher.publish(frame)
            } catch {
                // A lost frame is a sequence gap for the receivers, who resume at the
                // next keyframe; log the first failure of a run, not every frame.
                let count = failures.withLockedValue { $0 += 1; return $0 }
                if count == 1 || count % 1000 == 0 {
                    logger.warning("cannot publish to the bus", metadata: ["subject": "\(subject)", "error": "\(error)", "failures": "\(count)"])
                }
            }
        }
        let rung = subject.rendition
        let handover = handover?.bind(rung: rung, publish: publish) == true ? handover : nil
        // A GOP request gets exactly what a new viewer would, metadata and configuration
        // records first.
        let responder = try bus.subscribe(subject: MediaBusGOP.subject(for: subject)) { message in
            if message.payload.readableBytes > 0 {
                // Not a GOP request: another ingest's publisher check, or nothing.
                guard let checks, let request = MediaBusPublisherCheck.decodeRequest(message.payload), request.asker != checks.node,
                      let answer = hub.answerPublisherElsewhere(isOwner: { MediaBusPublisherCheck.digest(of: $0) == request.digest }, yielding: checks.yielding())
                else { return }
                if case .attached(replacedIdle: true) = answer {
                    logger.notice("a publisher of the stream on another ingest took it over", metadata: ["stream": "\(hub.path)"])
                }
                try? bus.respond(to: message, payload: MediaBusPublisherCheck.encode(MediaBusPublisherCheck.reply(for: answer)))
                return
            }
            if let handover, !handover.answersGOPRequests(for: rung) { return }
            // A request that crossed the hub's end: the responder is being cancelled, and it
            // must not answer beside a live hub elsewhere, nor open a mirror of nothing.
            if hub.isEnded { return }
            try? bus.respond(to: message, payload: MediaBusGOP.encode(hub.startFrames(), maxBytes: bus.maxPayload))
        }
        let gopResponder = NIOLockedValueBox<BusSubscription?>(responder)
        self.gopResponder = gopResponder
        self.subscription = FrameSubscription.start(on: hub, delivery: .inline { batch in
            for frame in batch.frames {
                if let handover {
                    handover.offer(frame, rung: rung)
                } else {
                    publish(frame)
                }
            }
            if batch.ended {
                var payload = ByteBuffer()
                payload.writeInteger(epoch)
                try? bus.publish(subject: endSubject, payload: payload)
                // The responder goes with the hub, not at `BusPublications`' next sweep: an
                // ended hub answers no GOP request, and a subject nobody answers is told so
                // by NATS at once ("no responders"), where a silent subscriber makes the
                // asker wait its whole timeout (a publisher that starts the stream again
                // on another ingest, `continueTimelineFromElsewhere`).
                Self.cancel(gopResponder)
            }
        })
        // A hub that ended before it could be followed says nothing any more either.
        if subscription == nil { Self.cancel(gopResponder) }
    }

    /// Stops forwarding and answering.
    public func cancel() {
        subscription?.cancel()
        Self.cancel(gopResponder)
    }

    /// Cancels the GOP responder once, whoever gets there first (the end, or `cancel`).
    private static func cancel(_ responder: NIOLockedValueBox<BusSubscription?>) {
        responder.withLockedValue { responder in
            responder?.cancel()
            responder = nil
        }
    }
}

/// How an ingest's publications answer the cluster's publisher checks: the node's token (a
/// node does not answer its own checks) and whether its publishers yield to their
/// reconnections elsewhere (the node drains).
public struct PublisherChecks: Sendable {
    public let node: UInt64
    public let yielding: @Sendable () -> Bool

    public init(node: UInt64, yielding: @escaping @Sendable () -> Bool) {
        self.node = node
        self.yielding = yielding
    }
}
